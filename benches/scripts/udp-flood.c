// flood HOST PORT SECONDS: 1-byte datagrams with sendmmsg, as fast as it goes.
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>
int main(int argc, char **argv) {
  int s = socket(AF_INET, SOCK_DGRAM, 0);
  struct sockaddr_in to = {0};
  to.sin_family = AF_INET; to.sin_port = htons(atoi(argv[2]));
  inet_pton(AF_INET, argv[1], &to.sin_addr);
  connect(s, (struct sockaddr *)&to, sizeof to);
  static struct mmsghdr m[1024]; static struct iovec v[1024]; char b = 'x';
  for (int i = 0; i < 1024; i++) { v[i].iov_base = &b; v[i].iov_len = 1; m[i].msg_hdr.msg_iov = &v[i]; m[i].msg_hdr.msg_iovlen = 1; }
  time_t end = time(0) + atoi(argv[3]); long sent = 0;
  while (time(0) < end) { int n = sendmmsg(s, m, 1024, 0); if (n > 0) sent += n; }
  printf("%ld\n", sent); return 0;
}
