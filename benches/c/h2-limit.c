/*
 * h2-limit: the physical limit of a gRPC unary call over nghttp2 — bare
 * nghttp2 with no runtime, for benches/scripts/grpc-vs-tonic.
 *
 * One thread, one epoll set, h2c by prior knowledge. Every request stream
 * is answered once its request side ends, whatever its path, headers or
 * body, with one fixed valid reply: `:status 200`, `content-type:
 * application/grpc`, the gRPC message `OrderReceipt { order: 42, notional:
 * 125000 }` and the trailer `grpc-status: 0`. Nothing is decoded or
 * checked: this is what answering costs when nothing is done, the floor
 * under any server built on nghttp2 (the demo's gRPC front is one).
 *
 * Usage: h2-limit [HOST:PORT]   (default 127.0.0.1:15053)
 *
 * Build (the script does it, against the nghttp2 that libnghttp2-sys
 * vendors, the same 1.68 the project links):
 *   cc -O2 -o h2-limit h2-limit.c -I$OUT/include $OUT/lib/libnghttp2.a
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <nghttp2/nghttp2.h>

/* The reply's one gRPC message: flag 0, length 6, then the protobuf
 * OrderReceipt { order (1): 42, notional (2): 125000 }. */
static const uint8_t REPLY[] = {0x00, 0x00, 0x00, 0x00, 0x06, 0x08, 0x2a, 0x10, 0xc8, 0xd0, 0x07};

#define NV(n, v)                                                                   \
  {(uint8_t *)(n), (uint8_t *)(v), sizeof(n) - 1, sizeof(v) - 1,                   \
   NGHTTP2_NV_FLAG_NO_COPY_NAME | NGHTTP2_NV_FLAG_NO_COPY_VALUE}

static const nghttp2_nv HEADERS[] = {NV(":status", "200"), NV("content-type", "application/grpc")};
static const nghttp2_nv TRAILERS[] = {NV("grpc-status", "0")};

struct conn {
  int fd;
  nghttp2_session *session;
  /* Bytes nghttp2 produced that the socket did not take yet. */
  uint8_t *out;
  size_t out_len, out_cap;
  int want_out; /* EPOLLOUT registered */
};

static int ep;

static void die(const char *what) {
  perror(what);
  exit(1);
}

/* The whole reply in one read: the message, then the trailers, which end
 * the stream (hence NO_END_STREAM on the data). */
static nghttp2_ssize read_reply(nghttp2_session *session, int32_t stream_id, uint8_t *buf,
                                size_t length, uint32_t *flags, nghttp2_data_source *source,
                                void *user_data) {
  (void)source;
  (void)user_data;
  if (length < sizeof REPLY) return NGHTTP2_ERR_CALLBACK_FAILURE;
  memcpy(buf, REPLY, sizeof REPLY);
  *flags |= NGHTTP2_DATA_FLAG_EOF | NGHTTP2_DATA_FLAG_NO_END_STREAM;
  if (nghttp2_submit_trailer(session, stream_id, TRAILERS, 1) != 0)
    return NGHTTP2_ERR_CALLBACK_FAILURE;
  return sizeof REPLY;
}

/* A request's side ended (END_STREAM on its headers or its data): answer. */
static int on_frame_recv(nghttp2_session *session, const nghttp2_frame *frame, void *user_data) {
  (void)user_data;
  if ((frame->hd.type == NGHTTP2_HEADERS || frame->hd.type == NGHTTP2_DATA) &&
      (frame->hd.flags & NGHTTP2_FLAG_END_STREAM) && frame->hd.stream_id > 0) {
    nghttp2_data_provider2 body = {.source = {.ptr = NULL}, .read_callback = read_reply};
    if (nghttp2_submit_response2(session, frame->hd.stream_id, HEADERS, 2, &body) != 0)
      return NGHTTP2_ERR_CALLBACK_FAILURE;
  }
  return 0;
}

static void set_events(struct conn *c, int out) {
  if (out == c->want_out) return;
  struct epoll_event ev = {.events = EPOLLIN | (out ? EPOLLOUT : 0), .data.ptr = c};
  if (epoll_ctl(ep, EPOLL_CTL_MOD, c->fd, &ev) != 0) die("epoll_ctl");
  c->want_out = out;
}

static void close_conn(struct conn *c) {
  epoll_ctl(ep, EPOLL_CTL_DEL, c->fd, NULL);
  close(c->fd);
  nghttp2_session_del(c->session);
  free(c->out);
  free(c);
}

/* Collects what nghttp2 has to send and writes as much as the socket
 * takes; 0 on success, -1 when the connection is over. */
static int flush_conn(struct conn *c) {
  for (;;) {
    const uint8_t *data;
    nghttp2_ssize n = nghttp2_session_mem_send2(c->session, &data);
    if (n < 0) return -1;
    if (n == 0) break;
    if (c->out_len + (size_t)n > c->out_cap) {
      size_t cap = c->out_cap ? c->out_cap : 16384;
      while (cap < c->out_len + (size_t)n) cap *= 2;
      c->out = realloc(c->out, cap);
      if (!c->out) die("realloc");
      c->out_cap = cap;
    }
    memcpy(c->out + c->out_len, data, (size_t)n);
    c->out_len += (size_t)n;
  }
  size_t off = 0;
  while (off < c->out_len) {
    ssize_t w = write(c->fd, c->out + off, c->out_len - off);
    if (w < 0) {
      if (errno == EAGAIN || errno == EWOULDBLOCK) break;
      if (errno == EINTR) continue;
      return -1;
    }
    off += (size_t)w;
  }
  memmove(c->out, c->out + off, c->out_len - off);
  c->out_len -= off;
  set_events(c, c->out_len > 0);
  if (c->out_len == 0 && !nghttp2_session_want_read(c->session) &&
      !nghttp2_session_want_write(c->session))
    return -1;
  return 0;
}

static nghttp2_session_callbacks *callbacks;

static void accept_all(int lfd) {
  for (;;) {
    int fd = accept4(lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0) {
      if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) return;
      perror("accept4");
      return;
    }
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    struct conn *c = calloc(1, sizeof *c);
    if (!c) die("calloc");
    c->fd = fd;
    if (nghttp2_session_server_new(&c->session, callbacks, c) != 0) die("session");
    /* The same stream limit as the demo's gRPC front. */
    nghttp2_settings_entry settings[] = {{NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS, 4096}};
    nghttp2_submit_settings(c->session, NGHTTP2_FLAG_NONE, settings, 1);
    struct epoll_event ev = {.events = EPOLLIN, .data.ptr = c};
    if (epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev) != 0) die("epoll_ctl add");
    if (flush_conn(c) != 0) close_conn(c);
  }
}

int main(int argc, char **argv) {
  const char *bind_to = argc > 1 ? argv[1] : "127.0.0.1:15053";
  char host[256];
  const char *colon = strrchr(bind_to, ':');
  if (!colon || (size_t)(colon - bind_to) >= sizeof host) {
    fprintf(stderr, "usage: h2-limit [HOST:PORT]\n");
    return 2;
  }
  memcpy(host, bind_to, (size_t)(colon - bind_to));
  host[colon - bind_to] = 0;
  signal(SIGPIPE, SIG_IGN);

  struct sockaddr_in addr = {.sin_family = AF_INET, .sin_port = htons((uint16_t)atoi(colon + 1))};
  if (inet_pton(AF_INET, host, &addr.sin_addr) != 1) {
    fprintf(stderr, "h2-limit: %s is not an IPv4 address\n", host);
    return 2;
  }
  int lfd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  int one = 1;
  setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  if (bind(lfd, (struct sockaddr *)&addr, sizeof addr) != 0) die("bind");
  if (listen(lfd, 1024) != 0) die("listen");

  nghttp2_session_callbacks_new(&callbacks);
  nghttp2_session_callbacks_set_on_frame_recv_callback(callbacks, on_frame_recv);

  ep = epoll_create1(EPOLL_CLOEXEC);
  struct epoll_event lev = {.events = EPOLLIN, .data.ptr = NULL};
  epoll_ctl(ep, EPOLL_CTL_ADD, lfd, &lev);
  fprintf(stderr, "h2-limit: listening on %s\n", bind_to);

  static uint8_t buf[65536];
  struct epoll_event events[256];
  for (;;) {
    int n = epoll_wait(ep, events, 256, -1);
    if (n < 0) {
      if (errno == EINTR) continue;
      die("epoll_wait");
    }
    for (int i = 0; i < n; i++) {
      struct conn *c = events[i].data.ptr;
      if (!c) {
        accept_all(lfd);
        continue;
      }
      int over = 0;
      if (events[i].events & (EPOLLIN | EPOLLHUP | EPOLLERR)) {
        for (;;) {
          ssize_t r = read(c->fd, buf, sizeof buf);
          if (r < 0) {
            if (errno == EAGAIN || errno == EWOULDBLOCK) break;
            if (errno == EINTR) continue;
            over = 1;
            break;
          }
          if (r == 0) {
            over = 1;
            break;
          }
          if (nghttp2_session_mem_recv2(c->session, buf, (size_t)r) < 0) {
            over = 1;
            break;
          }
        }
      }
      if (over || flush_conn(c) != 0) close_conn(c);
    }
  }
}
