/*
 * limen-ws-echo --listen ADDR [--connections N]
 *
 * A WebSocket echo server over limen's WebSocket codec alone (limen_ws_conn,
 * no hub): it answers the HTTP upgrade itself, its one computed header from
 * limen_ws_accept_key, then echoes every text and binary message back as it
 * came, and ends the close handshake the peer begins. One connection at a
 * time, blocking sockets: it shows the codec, not a server's loop.
 *
 * It prints `ws://<host:port>` once listening, serves N connections (1 by
 * default), frees everything and exits 0.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "limen.h"

static uint64_t mono_ns(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

static void die(const char *what) {
  fprintf(stderr, "limen-ws-echo: %s\n", what);
  exit(1);
}

static void check(limen_result r, const char *what) {
  if (r != LIMEN_RESULT_OK) {
    fprintf(stderr, "limen-ws-echo: %s: %s: %s\n", what, limen_result_name((uint32_t)r),
            limen_last_error());
    exit(1);
  }
}

static int send_all(int fd, const uint8_t *p, size_t n) {
  while (n > 0) {
    ssize_t w = send(fd, p, n, MSG_NOSIGNAL);
    if (w <= 0) return -1;
    p += w;
    n -= (size_t)w;
  }
  return 0;
}

/* Writes what the codec has queued. */
static int flush(int fd, limen_ws_conn *c) {
  limen_str out;
  check(limen_ws_conn_pending_output(c, &out), "pending output");
  if (out.len == 0) return 0;
  if (send_all(fd, out.ptr, out.len) != 0) return -1;
  check(limen_ws_conn_consume_output(c, mono_ns(), out.len), "consume");
  return 0;
}

/* Reads the HTTP request head and answers the upgrade; 0 when upgraded. */
static int upgrade(int fd) {
  char head[8192];
  size_t n = 0;
  while (n + 1 < sizeof head) {
    ssize_t r = recv(fd, head + n, sizeof head - 1 - n, 0);
    if (r <= 0) return -1;
    n += (size_t)r;
    head[n] = 0;
    if (strstr(head, "\r\n\r\n") != NULL) break;
  }
  /* The one header the answer computes from: Sec-WebSocket-Key. A request
   * without it is refused 400 (the codec's hub checks the rest). */
  const char *key = NULL;
  for (char *line = strstr(head, "\r\n"); line != NULL; line = strstr(line + 2, "\r\n"))
    if (strncasecmp(line + 2, "sec-websocket-key:", 18) == 0) {
      key = line + 20;
      break;
    }
  if (key == NULL) {
    const char *no = "HTTP/1.1 400 Bad Request\r\ncontent-length: 0\r\n\r\n";
    send_all(fd, (const uint8_t *)no, strlen(no));
    return -1;
  }
  size_t len = strcspn(key, "\r");
  uint8_t accept[64];
  size_t accept_len;
  check(limen_ws_accept_key((const uint8_t *)key, len, accept, sizeof accept, &accept_len),
        "the accept key");
  char answer[256];
  int m = snprintf(answer, sizeof answer,
                   "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\n"
                   "Connection: Upgrade\r\nSec-WebSocket-Accept: %.*s\r\n\r\n",
                   (int)accept_len, (const char *)accept);
  return send_all(fd, (const uint8_t *)answer, (size_t)m);
}

/* Echoes one upgraded connection until its CLOSED event. */
static void echo(int fd) {
  limen_ws_limits limits = limen_ws_limits_default();
  limits.binary = true;
  limen_ws_conn *c = NULL;
  check(limen_ws_conn_new(limits, &c), "a connection");
  int closed = 0;
  while (!closed) {
    uint8_t buf[16384];
    ssize_t r = recv(fd, buf, sizeof buf, 0);
    if (r > 0) check(limen_ws_conn_handle_data(c, mono_ns(), buf, (size_t)r), "data");
    else check(limen_ws_conn_handle_eof(c, mono_ns()), "eof");
    for (;;) {
      limen_ws_event ev;
      check(limen_ws_conn_poll_event(c, &ev), "poll");
      if (ev.kind == LIMEN_WS_EVENT_NONE) break;
      /* The event's bytes are lent until the next call: echo them first. */
      if (ev.kind == LIMEN_WS_EVENT_TEXT)
        check(limen_ws_conn_send_text(c, mono_ns(), ev.data.ptr, ev.data.len), "send text");
      else if (ev.kind == LIMEN_WS_EVENT_BINARY)
        check(limen_ws_conn_send_binary(c, mono_ns(), ev.data.ptr, ev.data.len), "send binary");
      else
        closed = 1;
    }
    if (flush(fd, c) != 0 || r <= 0) closed = 1;
  }
  limen_ws_conn_free(c);
}

int main(int argc, char **argv) {
  const char *addr = NULL;
  int connections = 1;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (strcmp(argv[i], "--listen") == 0) addr = argv[i + 1];
    else if (strcmp(argv[i], "--connections") == 0) connections = atoi(argv[i + 1]);
    else die("usage: limen-ws-echo --listen ADDR [--connections N]");
  }
  if (addr == NULL) die("usage: limen-ws-echo --listen ADDR [--connections N]");
  char host[64];
  const char *colon = strrchr(addr, ':');
  if (colon == NULL || (size_t)(colon - addr) >= sizeof host) die("ADDR is HOST:PORT");
  memcpy(host, addr, (size_t)(colon - addr));
  host[colon - addr] = 0;
  struct sockaddr_in sa = {0};
  sa.sin_family = AF_INET;
  sa.sin_port = htons((uint16_t)atoi(colon + 1));
  if (inet_pton(AF_INET, host, &sa.sin_addr) != 1) die("ADDR is an IPv4 HOST:PORT");
  int lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (lfd < 0 || bind(lfd, (struct sockaddr *)&sa, sizeof sa) != 0 || listen(lfd, 16) != 0)
    die("cannot listen");
  socklen_t sl = sizeof sa;
  getsockname(lfd, (struct sockaddr *)&sa, &sl);
  printf("ws://%s:%u\n", host, ntohs(sa.sin_port));
  fflush(stdout);
  for (int i = 0; i < connections; i++) {
    int fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
    if (fd < 0) die("accept failed");
    if (upgrade(fd) == 0) echo(fd);
    close(fd);
  }
  close(lfd);
  return 0;
}
