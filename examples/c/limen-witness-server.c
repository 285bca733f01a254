/*
 * limen-witness-server --public ADDR --admin-socket PATH [--program FILE]
 *                      [--operator NAME] [--grpc ADDR [--proto FILE]]
 *                      [--hub ADDR]
 *
 * Serves the witness program (conformance/programs/desk.hl) through limen's
 * C ABI: its exposure `public` over HTTP/1.1 at ADDR (host:port, port 0 for
 * any) and its exposure `admin` over Unix lines at PATH, with its own
 * sockets and poll(2). The handlers are written here in C, with the
 * behaviour `hale demo` has (drivers/src/demo/witness.rs):
 *
 * - Orders::place violates its position limit above a quantity of 10000
 *   (and when qty * limit overflows), else numbers the order from `next`
 *   (41) and answers {"order":N,"notional":qty*limit};
 * - Orders::cancel fails unknown_order outside the placed range, else
 *   answers {"order":N,"was_open":true};
 * - Ledger::rebalance violates on an empty book, else moves 1500 cent.
 *
 * The identity sources are the program's: the bearer source `Tokens` names
 * alice, bob, carol and dave by t-<name>; public's grants make alice a
 * trader; admin's make the user running the server its operator (as
 * `hale demo` does; --operator names another principal, `uid:<n>`). The public and admin exposures share one Orders.
 *
 * With --grpc it also serves `public` over gRPC (HTTP/2, prior knowledge)
 * at ADDR, as `hale demo --grpc` does: the exposure `public` of the program
 * with its serve site's transport replaced (limen_exposure_new_over), its
 * connections limen_fronts made by limen_front_new_grpc, sharing public's
 * identity sources and the one Orders. --proto writes Public's proto3 service there
 * (limen_hale_project), the file a client's stubs are generated from.
 *
 * With --hub it also serves the program's hub `fills` over WebSocket at
 * ADDR (a limen_hub: the bearer source above, its grants making dave an
 * operator, as the program's hub_roles do), and every order Orders::place
 * accepts publishes its Fill there, as the program's Orders does.
 *
 * It prints one line per exposure, `<identity> <endpoint>`, then serves
 * until SIGINT or SIGTERM. Then the hub is stopped (`closed`, then the
 * close frame, on every connection) and each gRPC connection is stopped
 * (GOAWAY), each given at most two seconds to write what it has queued;
 * it frees everything and exits 0.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "limen.h"

#ifndef WITNESS_PROGRAM
#define WITNESS_PROGRAM "conformance/programs/desk.hl"
#endif

#define USAGE \
  "usage: limen-witness-server --public ADDR --admin-socket PATH [--program FILE] " \
  "[--operator NAME] [--grpc ADDR [--proto FILE]] [--hub ADDR]"

static volatile sig_atomic_t stopping = 0;
static void on_signal(int sig) { (void)sig; stopping = 1; }

static uint64_t mono_ns(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

static uint64_t wall_ns(void) {
  struct timespec t;
  clock_gettime(CLOCK_REALTIME, &t);
  return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

static void die(const char *what) {
  fprintf(stderr, "limen-witness-server: %s\n", what);
  exit(1);
}

static void check(limen_result r, const char *what) {
  if (r != LIMEN_RESULT_OK) {
    fprintf(stderr, "limen-witness-server: %s: %s: %s\n", what, limen_result_name((uint32_t)r),
            limen_last_error());
    exit(1);
  }
}

/* ---- the witness's receivers ---------------------------------------- */

static int64_t orders_next = 41;
static int64_t orders_open = 0;
static int64_t ledger_moved = 0;

/* The span of the top-level member `key` of the JSON object `json`, or
 * 0 when it has none. The payload is compact JSON written by the library. */
static int json_member(const uint8_t *json, size_t len, const char *key, size_t *start,
                       size_t *end) {
  size_t i = 0, klen = strlen(key);
  if (len == 0 || json[0] != '{') return 0;
  i = 1;
  while (i < len && json[i] == '"') {
    size_t ks = ++i;
    while (i < len && json[i] != '"') i += json[i] == '\\' ? 2 : 1;
    size_t ke = i++;
    if (i >= len || json[i] != ':') return 0;
    size_t vs = ++i;
    int depth = 0;
    while (i < len) {
      uint8_t c = json[i];
      if (c == '"') {
        i++;
        while (i < len && json[i] != '"') i += json[i] == '\\' ? 2 : 1;
        i++;
        continue;
      }
      if (c == '{' || c == '[') depth++;
      if (c == '}' || c == ']') {
        if (depth == 0) break;
        depth--;
      }
      if (c == ',' && depth == 0) break;
      i++;
    }
    if (ke - ks == klen && memcmp(json + ks, key, klen) == 0) {
      *start = vs;
      *end = i;
      return 1;
    }
    if (i < len && json[i] == ',') i++;
  }
  return 0;
}

/* An integer member, 0 when absent or not an i64 (as serde's as_i64). */
static int64_t json_int(const uint8_t *json, size_t len, const char *key) {
  size_t s, e;
  char buf[32];
  if (!json_member(json, len, key, &s, &e) || e - s == 0 || e - s >= sizeof buf) return 0;
  memcpy(buf, json + s, e - s);
  buf[e - s] = 0;
  char *rest;
  errno = 0;
  long long v = strtoll(buf, &rest, 10);
  if (errno != 0 || *rest != 0) return 0;
  return (int64_t)v;
}

/* Whether a string member is present and not empty. */
static int json_nonempty_string(const uint8_t *json, size_t len, const char *key) {
  size_t s, e;
  if (!json_member(json, len, key, &s, &e)) return 0;
  return e - s > 2 && json[s] == '"';
}

static void publish_fill(int64_t order, int64_t qty, int64_t price);

/* Runs one call; writes the completion's body into out (cap bytes). */
static uint32_t handle_call(const char *member, const uint8_t *p, size_t n, char *out, size_t cap,
                            size_t *out_len) {
  *out_len = 0;
  if (strcmp(member, "Orders::place") == 0) {
    int64_t qty = json_int(p, n, "qty"), limit = json_int(p, n, "limit"), notional;
    if (qty > 10000 || __builtin_mul_overflow(limit, qty, &notional)) {
      fprintf(stderr, "limen-witness-server: self.orders violated a closure; on_failure ran\n");
      return LIMEN_COMPLETION_VIOLATED;
    }
    int64_t order = orders_next++;
    orders_open++;
    publish_fill(order, qty, limit);
    *out_len = (size_t)snprintf(out, cap, "{\"order\":%" PRId64 ",\"notional\":%" PRId64 "}", order,
                                notional);
    return LIMEN_COMPLETION_RETURNED;
  }
  if (strcmp(member, "Orders::cancel") == 0) {
    int64_t order = json_int(p, n, "order");
    if (order < 41 || order >= orders_next) {
      *out_len = (size_t)snprintf(
          out, cap, "{\"code\":\"unknown_order\",\"reason\":\"no order %" PRId64 "\"}", order);
      return LIMEN_COMPLETION_FAILED;
    }
    orders_open--;
    *out_len = (size_t)snprintf(out, cap, "{\"order\":%" PRId64 ",\"was_open\":true}", order);
    return LIMEN_COMPLETION_RETURNED;
  }
  if (strcmp(member, "Ledger::rebalance") == 0) {
    if (!json_nonempty_string(p, n, "book")) {
      fprintf(stderr, "limen-witness-server: self.ledger violated a closure; on_failure ran\n");
      return LIMEN_COMPLETION_VIOLATED;
    }
    ledger_moved += 1500;
    *out_len = (size_t)snprintf(out, cap, "{\"moved\":1500}");
    return LIMEN_COMPLETION_RETURNED;
  }
  return LIMEN_COMPLETION_PROCESS_EXITS;
}

/* ---- connections and exposures ------------------------------------- */

/* How an exposure's connections are framed. */
enum via { VIA_HTTP, VIA_UNIX, VIA_GRPC };

typedef struct {
  limen_exposure *exposure;
  int listen_fd;
  enum via via;
} served;

/* A connection: one limen_front whatever its transport (Unix, HTTP or
 * gRPC), made by that transport's constructor and driven by the same
 * calls. */
typedef struct {
  int fd;
  limen_front *front;
  served *by;
  uint64_t correlation;
  int closed, dirty;
} conn;

#define MAX_EXPOSURES 3
static served exposures[MAX_EXPOSURES];
static int nexposures = 2;
static conn *conns = NULL;
static size_t nconns = 0, capconns = 0;
static uint64_t next_correlation = 1;

static conn *find(uint64_t correlation) {
  for (size_t i = 0; i < nconns; i++)
    if (conns[i].correlation == correlation && !conns[i].closed) return &conns[i];
  return NULL;
}

static void pump(served *s, uint64_t now) {
  for (;;) {
    limen_exposure_event ev;
    check(limen_exposure_poll_event(s->exposure, &ev), "poll the exposure");
    switch (ev.kind) {
      case LIMEN_EXPOSURE_EVENT_NONE:
        return;
      case LIMEN_EXPOSURE_EVENT_DELIVER: {
        conn *c = find(ev.correlation);
        if (c != NULL) {
          check(limen_front_deliver(c->front, c->by->exposure, now), "deliver");
          c->dirty = 1;
        }
        break;
      }
      case LIMEN_EXPOSURE_EVENT_DISPATCH: {
        char body[256];
        size_t len;
        uint32_t how = handle_call(ev.member_name, ev.payload.ptr, ev.payload.len, body,
                                   sizeof body, &len);
        check(limen_exposure_complete(s->exposure, ev.request_id, how, (const uint8_t *)body, len),
              "complete");
        break;
      }
      case LIMEN_EXPOSURE_EVENT_ASK:
        check(limen_exposure_receiver_born(s->exposure, ev.receiver, 1), "announce a receiver");
        break;
      case LIMEN_EXPOSURE_EVENT_CLOSE_CONNECTION: {
        conn *c = find(ev.correlation);
        if (c != NULL) {
          check(limen_front_abort(c->front), "abort");
          c->dirty = 1;
        }
        break;
      }
      case LIMEN_EXPOSURE_EVENT_STOP_LISTENING:
        break;
    }
  }
}

/* Takes a connection's front events and writes what it can. */
static void service(conn *c) {
  for (;;) {
    uint64_t now = mono_ns();
    for (;;) {
      limen_front_event k;
      check(limen_front_poll_event(c->front, &k), "poll a front");
      if (k == LIMEN_FRONT_EVENT_NONE) break;
      if (k == LIMEN_FRONT_EVENT_REQUEST) {
        check(limen_front_submit(c->front, c->by->exposure, now, wall_ns(), NULL), "submit");
        pump(c->by, now);
      } else if (k == LIMEN_FRONT_EVENT_LOST) {
        check(limen_exposure_connection_lost(c->by->exposure, c->correlation), "lose");
        pump(c->by, now);
      } else if (k == LIMEN_FRONT_EVENT_CLOSED) {
        c->closed = 1;
        return;
      }
    }
    limen_str out;
    check(limen_front_pending_output(c->front, &out), "pending output");
    if (out.len == 0) return;
    ssize_t n = send(c->fd, out.ptr, out.len, MSG_NOSIGNAL);
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) return;
    if (n < 0) {
      /* The peer is gone: the connection ends with what it had queued. */
      check(limen_front_handle_eof(c->front, now), "a failed write");
      check(limen_front_abort(c->front), "abort");
      continue;
    }
    check(limen_front_consume_output(c->front, mono_ns(), (size_t)n), "consume");
  }
}

static void accept_on(served *s) {
  for (;;) {
    int fd = accept4(s->listen_fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0) return;
    if (nconns == capconns) {
      capconns = capconns ? capconns * 2 : 16;
      conns = realloc(conns, capconns * sizeof *conns);
      if (conns == NULL) die("out of memory");
    }
    conn *c = &conns[nconns++];
    memset(c, 0, sizeof *c);
    c->fd = fd;
    c->by = s;
    c->correlation = next_correlation++;
    uint64_t now = mono_ns();
    if (s->via == VIA_UNIX) {
      struct ucred cred;
      socklen_t len = sizeof cred;
      int64_t uid = -1, gid = -1, pid = -1;
      if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) == 0) {
        uid = cred.uid;
        gid = cred.gid;
        pid = cred.pid;
      }
      check(limen_front_new_unix(now, uid, gid, pid, c->correlation, &c->front), "a Unix front");
    } else {
      int one = 1;
      setsockopt(fd, IPPROTO_TCP, 1 /* TCP_NODELAY */, &one, sizeof one);
      if (s->via == VIA_GRPC)
        check(limen_front_new_grpc(now, s->exposure, c->correlation, &c->front), "a gRPC front");
      else
        check(limen_front_new_http(now, c->correlation, &c->front), "an HTTP front");
    }
    c->dirty = 1;
  }
}

/* Closes a connection's socket after reading what the peer sent that
 * nobody will read: closing with unread input sends RST, which may cost the
 * peer the last bytes written (a GOAWAY, a close frame) before it reads
 * them. */
static void close_gently(int fd) {
  uint8_t b[4096];
  while (recv(fd, b, sizeof b, MSG_DONTWAIT) > 0) {
  }
  close(fd);
}

/* Services every connection with something to do, until none has. */
static void service_all(void) {
  for (int again = 1; again;) {
    again = 0;
    for (size_t i = 0; i < nconns; i++)
      if (conns[i].dirty && !conns[i].closed) {
        conns[i].dirty = 0;
        service(&conns[i]);
        again = 1;
      }
  }
}

/* Closes and frees the connections that are done. */
static void reap(void) {
  size_t kept = 0;
  for (size_t i = 0; i < nconns; i++) {
    if (conns[i].closed || limen_front_is_closed(conns[i].front)) {
      close_gently(conns[i].fd);
      limen_front_free(conns[i].front);
    } else {
      conns[kept++] = conns[i];
    }
  }
  nconns = kept;
}

/* At shutdown: every gRPC connection is sent GOAWAY, and what the fronts
 * have queued is written while a peer reads it, for at most a second, so a
 * client sees the connection end as HTTP/2 ends one, not reset. The calls
 * on the exposure are all answered here (the handlers run inline). */
static void stop_grpc(void) {
  uint64_t until = mono_ns() + 1000000000u;
  for (size_t i = 0; i < nconns; i++)
    if (conns[i].by->via == VIA_GRPC) {
      check(limen_front_stop(conns[i].front, mono_ns()), "stop a gRPC front");
      conns[i].dirty = 1;
    }
  for (;;) {
    service_all();
    reap();
    int waiting = 0;
    for (size_t i = 0; i < nconns; i++) waiting += conns[i].by->via == VIA_GRPC;
    uint64_t now = mono_ns();
    if (waiting == 0 || now >= until) return;
    struct pollfd p[64];
    nfds_t n = 0;
    for (size_t i = 0; i < nconns && n < 64; i++)
      if (conns[i].by->via == VIA_GRPC) {
        limen_str out;
        check(limen_front_pending_output(conns[i].front, &out), "pending output");
        p[n].fd = conns[i].fd;
        p[n].events = (short)(POLLIN | (out.len > 0 ? POLLOUT : 0));
        n++;
      }
    if (poll(p, n, (int)((until - now) / 1000000 + 1)) <= 0) return;
    nfds_t k = 0;
    for (size_t i = 0; i < nconns && k < n; i++)
      if (conns[i].by->via == VIA_GRPC) {
        if (p[k].revents & (POLLIN | POLLHUP | POLLERR)) {
          uint8_t buf[16384];
          ssize_t got = recv(conns[i].fd, buf, sizeof buf, 0);
          if (got > 0)
            check(limen_front_handle_data(conns[i].front, mono_ns(), buf, (size_t)got), "data");
          else if (got == 0 || (errno != EAGAIN && errno != EINTR))
            check(limen_front_handle_eof(conns[i].front, mono_ns()), "eof");
        }
        conns[i].dirty = 1;
        k++;
      }
  }
}

/* ---- the hub --------------------------------------------------------- */

/* A hub connection: its socket and the id the hub knows it by. */
typedef struct {
  int fd;
  uint64_t id;
} hub_conn;

static limen_hub *hub = NULL;
static int hub_fd = -1;
static hub_conn *hconns = NULL;
static size_t nhconns = 0, caphconns = 0;
static uint64_t next_hub_id = 1;

static hub_conn *hub_find(uint64_t id) {
  for (size_t i = 0; i < nhconns; i++)
    if (hconns[i].id == id) return &hconns[i];
  return NULL;
}

/* Writes what the socket takes of a connection's pending output. */
static void hub_write(hub_conn *h) {
  for (;;) {
    limen_str out;
    check(limen_hub_pending_output(hub, h->id, &out), "the hub's pending output");
    if (out.len == 0) return;
    ssize_t n = send(h->fd, out.ptr, out.len, MSG_NOSIGNAL);
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) return;
    if (n < 0) {
      /* The peer is gone: the hub forgets it (a CLOSE event follows). */
      check(limen_hub_handle_eof(hub, mono_ns(), h->id), "a failed hub write");
      return;
    }
    check(limen_hub_consume_output(hub, mono_ns(), h->id, (size_t)n), "consume hub output");
  }
}

/* Takes the hub's events until none: writes on OUTPUT, closes on CLOSE. */
static void hub_pump(void) {
  for (;;) {
    limen_hub_event ev;
    check(limen_hub_poll_event(hub, &ev), "poll the hub");
    if (ev.kind == LIMEN_HUB_EVENT_NONE) return;
    hub_conn *h = hub_find(ev.conn);
    if (h == NULL) continue;
    if (ev.kind == LIMEN_HUB_EVENT_OUTPUT) {
      hub_write(h);
    } else {
      close_gently(h->fd);
      *h = hconns[--nhconns];
    }
  }
}

/* Orders::place's Fill, published on the hub by the Fills topic's codec. */
static void publish_fill(int64_t order, int64_t qty, int64_t price) {
  if (hub == NULL) return;
  char fill[128];
  int n = snprintf(fill, sizeof fill,
                   "{\"order\":%" PRId64 ",\"qty\":%" PRId64 ",\"price\":%" PRId64 "}", order,
                   qty, price);
  limen_result r =
      limen_hub_publish(hub, mono_ns(), "Fills", (const uint8_t *)fill, (size_t)n, NULL);
  /* After stop() nothing is published: that is the hub's answer, not a fault. */
  if (r != LIMEN_RESULT_INVALID_STATE) check(r, "publish a fill");
  hub_pump();
}

static void hub_accept(void) {
  for (;;) {
    int fd = accept4(hub_fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0) return;
    if (nhconns == caphconns) {
      caphconns = caphconns ? caphconns * 2 : 16;
      hconns = realloc(hconns, caphconns * sizeof *hconns);
      if (hconns == NULL) die("out of memory");
    }
    hconns[nhconns] = (hub_conn){.fd = fd, .id = next_hub_id++};
    check(limen_hub_accept(hub, mono_ns(), hconns[nhconns].id), "accept on the hub");
    nhconns++;
  }
}

/* The ids of the connections hub_pollfds polled, in its order: a fill
 * published meanwhile may close one and move the array. */
static uint64_t *hpolled = NULL;
static size_t caphpolled = 0;

/* One round of hub I/O on `p` (what hub_pollfds wrote, `n` entries, now
 * polled): reads, timeouts, writes, then the events. */
static void hub_io(struct pollfd *p, size_t n) {
  uint64_t now = mono_ns();
  for (size_t i = 0; i < n; i++) {
    if (!(p[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
    /* Closed since the poll: its descriptor may be another's by now. */
    hub_conn *h = hub_find(hpolled[i]);
    if (h == NULL) continue;
    uint8_t buf[16384];
    ssize_t got = recv(h->fd, buf, sizeof buf, 0);
    if (got > 0)
      check(limen_hub_handle_data(hub, now, wall_ns(), h->id, buf, (size_t)got), "hub data");
    else if (got == 0 || (errno != EAGAIN && errno != EINTR))
      check(limen_hub_handle_eof(hub, now, h->id), "hub eof");
  }
  uint64_t d;
  if (limen_hub_poll_timeout(hub, &d) && d <= now)
    check(limen_hub_handle_timeout(hub, now), "the hub's timeout");
  hub_pump();
  for (size_t i = 0; i < nhconns; i++) hub_write(&hconns[i]);
  hub_pump();
}

/* The hub connections' pollfds into `p` (room for nhconns). */
static void hub_pollfds(struct pollfd *p) {
  if (caphpolled < nhconns) {
    caphpolled = nhconns * 2;
    hpolled = realloc(hpolled, caphpolled * sizeof *hpolled);
    if (hpolled == NULL) die("out of memory");
  }
  for (size_t i = 0; i < nhconns; i++) {
    hpolled[i] = hconns[i].id;
    limen_str out;
    check(limen_hub_pending_output(hub, hconns[i].id, &out), "the hub's pending output");
    p[i].fd = hconns[i].fd;
    p[i].events = (short)((limen_hub_wants_read(hub, hconns[i].id) ? POLLIN : 0) |
                          (out.len > 0 ? POLLOUT : 0));
    p[i].revents = 0;
  }
}

/* At shutdown: stop() the hub, and serve its connections until each has
 * written `closed` and its close frame and is closed, for at most two
 * seconds. */
static void stop_hub(void) {
  if (hub == NULL) return;
  check(limen_hub_stop(hub, mono_ns()), "stop the hub");
  hub_pump();
  uint64_t until = mono_ns() + 2000000000u;
  while (!limen_hub_is_finished(hub) && nhconns > 0) {
    uint64_t now = mono_ns(), d;
    if (now >= until) break;
    uint64_t wait = until - now;
    if (limen_hub_poll_timeout(hub, &d)) wait = d <= now ? 0 : (d - now < wait ? d - now : wait);
    size_t n = nhconns;
    struct pollfd *p = malloc(n * sizeof *p);
    if (p == NULL) die("out of memory");
    hub_pollfds(p);
    if (poll(p, (nfds_t)n, (int)(wait / 1000000 + 1)) < 0 && errno != EINTR) die("poll failed");
    hub_io(p, n);
    free(p);
  }
  for (size_t i = 0; i < nhconns; i++) close(hconns[i].fd);
  nhconns = 0;
}

static char *read_file(const char *path, size_t *len) {
  FILE *f = fopen(path, "rb");
  if (f == NULL) return NULL;
  size_t cap = 1 << 16, n = 0;
  char *buf = malloc(cap);
  size_t got;
  while (buf != NULL && (got = fread(buf + n, 1, cap - n, f)) > 0) {
    n += got;
    if (n == cap) {
      char *more = realloc(buf, cap *= 2);
      if (more == NULL) free(buf);
      buf = more;
    }
  }
  fclose(f);
  *len = n;
  return buf;
}

static int listen_tcp(const char *addr, char *bound, size_t cap) {
  char host[256];
  const char *colon = strrchr(addr, ':');
  if (colon == NULL || (size_t)(colon - addr) >= sizeof host) die("an address is HOST:PORT");
  memcpy(host, addr, (size_t)(colon - addr));
  host[colon - addr] = 0;
  struct sockaddr_in sa = {0};
  sa.sin_family = AF_INET;
  sa.sin_port = htons((uint16_t)atoi(colon + 1));
  if (inet_pton(AF_INET, host, &sa.sin_addr) != 1) die("an address is an IPv4 HOST:PORT");
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  int one = 1;
  setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  if (fd < 0 || bind(fd, (struct sockaddr *)&sa, sizeof sa) != 0 || listen(fd, 128) != 0)
    die("cannot listen on a TCP address");
  socklen_t len = sizeof sa;
  getsockname(fd, (struct sockaddr *)&sa, &len);
  snprintf(bound, cap, "%s:%u", host, ntohs(sa.sin_port));
  return fd;
}

static int listen_unix(const char *path) {
  struct sockaddr_un sa = {0};
  sa.sun_family = AF_UNIX;
  if (strlen(path) >= sizeof sa.sun_path) die("--admin-socket is too long");
  strcpy(sa.sun_path, path);
  unlink(path);
  int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0 || bind(fd, (struct sockaddr *)&sa, sizeof sa) != 0 || listen(fd, 128) != 0)
    die("cannot listen on --admin-socket");
  return fd;
}

/* Builds the exposure `name`; `over` (a limen_transport, or -1 for the one
 * its serve site names) replaces its transport. */
static limen_exposure *build(const char *src, size_t len, const char *name, int over,
                             limen_identity *ids, const char *bound) {
  limen_exposure *e = NULL;
  if (over < 0)
    check(limen_exposure_new((const uint8_t *)src, len, name, ids, bound, &e), name);
  else
    check(limen_exposure_new_over((const uint8_t *)src, len, name, (uint32_t)over, ids, bound, &e),
          name);
  uint8_t identity[256];
  size_t n;
  check(limen_exposure_identity(e, identity, sizeof identity, &n), "identity");
  printf("  %.*s ", (int)n, (const char *)identity);
  return e;
}

/* Writes the surface Public's proto3 service, as limen projects it, to
 * `path`. */
static void write_proto(const char *src, size_t len, const char *path) {
  limen_hale_checked *checked = NULL;
  check(limen_hale_check("desk.hl", (const uint8_t *)src, len, &checked), "check the program");
  size_t need = 0;
  limen_result r = limen_hale_project(checked, LIMEN_HALE_PROJECTION_PROTO, "Public", NULL, 0, &need);
  if (r != LIMEN_RESULT_BUFFER_TOO_SMALL && r != LIMEN_RESULT_OK) check(r, "project Public");
  uint8_t *text = malloc(need ? need : 1);
  if (text == NULL) die("out of memory");
  check(limen_hale_project(checked, LIMEN_HALE_PROJECTION_PROTO, "Public", text, need, &need),
        "project Public");
  FILE *f = fopen(path, "wb");
  if (f == NULL || fwrite(text, 1, need, f) != need || fclose(f) != 0) die("cannot write --proto");
  free(text);
  limen_hale_checked_free(checked);
}

int main(int argc, char **argv) {
  const char *public_addr = NULL, *admin_path = NULL, *program = WITNESS_PROGRAM;
  const char *operator_name = NULL, *grpc_addr = NULL, *proto_path = NULL, *hub_addr = NULL;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (strcmp(argv[i], "--public") == 0) public_addr = argv[i + 1];
    else if (strcmp(argv[i], "--admin-socket") == 0) admin_path = argv[i + 1];
    else if (strcmp(argv[i], "--program") == 0) program = argv[i + 1];
    else if (strcmp(argv[i], "--operator") == 0) operator_name = argv[i + 1];
    else if (strcmp(argv[i], "--grpc") == 0) grpc_addr = argv[i + 1];
    else if (strcmp(argv[i], "--proto") == 0) proto_path = argv[i + 1];
    else if (strcmp(argv[i], "--hub") == 0) hub_addr = argv[i + 1];
    else die(USAGE);
  }
  if (public_addr == NULL || admin_path == NULL)
    die(USAGE);
  size_t src_len;
  char *src = read_file(program, &src_len);
  if (src == NULL) die("cannot read the program");

  struct sigaction sa = {0};
  sa.sa_handler = on_signal;
  sigaction(SIGINT, &sa, NULL);
  sigaction(SIGTERM, &sa, NULL);
  signal(SIGPIPE, SIG_IGN);

  printf("limen-witness-server %s: serving %s through the C ABI\n", limen_version(), program);
  char bound[300];
  exposures[0].listen_fd = listen_tcp(public_addr, bound, sizeof bound);
  limen_identity *pub = NULL;
  check(limen_identity_new(&pub), "identity");
  const char *names[] = {"alice", "bob", "carol", "dave"};
  for (int i = 0; i < 4; i++) {
    char token[16];
    snprintf(token, sizeof token, "t-%s", names[i]);
    check(limen_identity_add_token(pub, token, names[i], 0), "a token");
  }
  check(limen_identity_set_refused(pub, "no such token"), "refused");
  check(limen_identity_add_grant(pub, "alice", "trader"), "a grant");
  exposures[0].exposure = build(src, src_len, "public", -1, pub, bound);
  printf("http://%s\n", bound);
  if (grpc_addr != NULL) {
    served *g = &exposures[nexposures++];
    g->via = VIA_GRPC;
    g->listen_fd = listen_tcp(grpc_addr, bound, sizeof bound);
    g->exposure = build(src, src_len, "public", LIMEN_TRANSPORT_GRPC, pub, bound);
    if (limen_exposure_transport(g->exposure) != LIMEN_TRANSPORT_GRPC)
      die("public over gRPC is not a gRPC exposure");
    printf("grpc://%s\n", bound);
  }
  if (hub_addr != NULL) {
    /* The program's hub_roles: dave is the hub's operator. */
    limen_identity *hub_ids = NULL;
    check(limen_identity_new(&hub_ids), "identity");
    for (int i = 0; i < 4; i++) {
      char token[16];
      snprintf(token, sizeof token, "t-%s", names[i]);
      check(limen_identity_add_token(hub_ids, token, names[i], 0), "a token");
    }
    check(limen_identity_set_refused(hub_ids, "no such token"), "refused");
    check(limen_identity_add_grant(hub_ids, "dave", "operator"), "a grant");
    hub_fd = listen_tcp(hub_addr, bound, sizeof bound);
    check(limen_hub_new((const uint8_t *)src, src_len, "fills", hub_ids, bound, &hub), "fills");
    limen_identity_free(hub_ids);
    uint8_t identity[256];
    size_t n;
    check(limen_hub_identity(hub, identity, sizeof identity, &n), "the hub's identity");
    printf("  %.*s ws://%s\n", (int)n, (const char *)identity, bound);
  }
  limen_identity_free(pub);
  if (proto_path != NULL) write_proto(src, src_len, proto_path);

  exposures[1].listen_fd = listen_unix(admin_path);
  exposures[1].via = VIA_UNIX;
  limen_identity *admin = NULL;
  check(limen_identity_new(&admin), "identity");
  char me[32];
  snprintf(me, sizeof me, "uid:%u", (unsigned)getuid());
  check(limen_identity_add_grant(admin, operator_name ? operator_name : me, "operator"),
        "a grant");
  exposures[1].exposure = build(src, src_len, "admin", -1, admin, admin_path);
  printf("unix:%s\n", admin_path);
  limen_identity_free(admin);
  free(src);
  fflush(stdout);

  struct pollfd *fds = NULL;
  while (!stopping) {
    /* The listeners, the hub's listener, the fronts, the hub's connections. */
    size_t base = (size_t)nexposures + (hub != NULL), hbase = base + nconns;
    fds = realloc(fds, (hbase + nhconns + 1) * sizeof *fds);
    if (fds == NULL) die("out of memory");
    uint64_t now = mono_ns(), deadline = UINT64_MAX, d;
    for (int i = 0; i < nexposures; i++) {
      fds[i].fd = exposures[i].listen_fd;
      fds[i].events = POLLIN;
      if (limen_exposure_poll_timeout(exposures[i].exposure, &d) && d < deadline) deadline = d;
    }
    for (size_t i = 0; i < nconns; i++) {
      limen_str out;
      check(limen_front_pending_output(conns[i].front, &out), "pending output");
      fds[base + i].fd = conns[i].fd;
      fds[base + i].events =
          (short)((limen_front_wants_read(conns[i].front) ? POLLIN : 0) | (out.len > 0 ? POLLOUT : 0));
      if (limen_front_poll_timeout(conns[i].front, &d) && d < deadline) deadline = d;
    }
    size_t nh = nhconns;
    if (hub != NULL) {
      fds[nexposures].fd = hub_fd;
      fds[nexposures].events = POLLIN;
      hub_pollfds(&fds[hbase]);
      if (limen_hub_poll_timeout(hub, &d) && d < deadline) deadline = d;
    }
    int timeout = -1;
    if (deadline != UINT64_MAX) timeout = deadline <= now ? 0 : (int)((deadline - now) / 1000000 + 1);
    int ready = poll(fds, (nfds_t)(hbase + nh), timeout);
    if (ready < 0 && errno != EINTR) die("poll failed");
    now = mono_ns();
    for (size_t i = 0; i < nconns && ready > 0; i++) {
      conn *c = &conns[i];
      short re = fds[base + i].revents;
      if (re & (POLLIN | POLLHUP | POLLERR)) {
        uint8_t buf[65536];
        ssize_t n = recv(c->fd, buf, sizeof buf, 0);
        if (n > 0) check(limen_front_handle_data(c->front, now, buf, (size_t)n), "data");
        else if (n == 0 || (errno != EAGAIN && errno != EINTR))
          check(limen_front_handle_eof(c->front, now), "eof");
        c->dirty = 1;
      }
      if (re & POLLOUT) c->dirty = 1;
    }
    for (int i = 0; i < nexposures; i++)
      if (ready > 0 && (fds[i].revents & POLLIN)) accept_on(&exposures[i]);
    for (size_t i = 0; i < nconns; i++)
      if (limen_front_poll_timeout(conns[i].front, &d) && d <= now) {
        check(limen_front_handle_timeout(conns[i].front, now), "a front's timeout");
        conns[i].dirty = 1;
      }
    for (int i = 0; i < nexposures; i++)
      if (limen_exposure_poll_timeout(exposures[i].exposure, &d) && d <= now) {
        check(limen_exposure_handle_timeout(exposures[i].exposure, now), "a timeout");
        pump(&exposures[i], now);
      }
    service_all();
    reap();
    if (hub != NULL) {
      if (ready > 0 && (fds[nexposures].revents & POLLIN)) hub_accept();
      hub_io(&fds[hbase], nh);
    }
  }
  stop_hub();
  stop_grpc();
  for (size_t i = 0; i < nconns; i++) {
    close(conns[i].fd);
    limen_front_free(conns[i].front);
  }
  free(conns);
  free(fds);
  for (int i = 0; i < nexposures; i++) {
    close(exposures[i].listen_fd);
    limen_exposure_free(exposures[i].exposure);
  }
  if (hub != NULL) close(hub_fd);
  limen_hub_free(hub);
  free(hconns);
  free(hpolled);
  unlink(admin_path);
  return 0;
}
