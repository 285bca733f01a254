/*
 * limen-witness-server --public ADDR --admin-socket PATH [--program FILE]
 *                      [--operator NAME]
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
 * It prints one line per exposure, `<identity> <endpoint>`, then serves
 * until SIGINT or SIGTERM, frees everything and exits 0.
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
  "[--operator NAME]"

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

typedef struct {
  limen_exposure *exposure;
  int listen_fd;
  int unix_socket;
} served;

typedef struct {
  int fd;
  limen_front *front;
  served *by;
  uint64_t correlation;
  int closed, dirty;
} conn;

static served exposures[2];
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
          check(limen_front_deliver(c->front, s->exposure, now), "deliver");
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
    if (s->unix_socket) {
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
      check(limen_front_new_http(now, c->correlation, &c->front), "an HTTP front");
    }
    c->dirty = 1;
  }
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
  if (colon == NULL || (size_t)(colon - addr) >= sizeof host) die("--public takes HOST:PORT");
  memcpy(host, addr, (size_t)(colon - addr));
  host[colon - addr] = 0;
  struct sockaddr_in sa = {0};
  sa.sin_family = AF_INET;
  sa.sin_port = htons((uint16_t)atoi(colon + 1));
  if (inet_pton(AF_INET, host, &sa.sin_addr) != 1) die("--public takes an IPv4 HOST:PORT");
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  int one = 1;
  setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  if (fd < 0 || bind(fd, (struct sockaddr *)&sa, sizeof sa) != 0 || listen(fd, 128) != 0)
    die("cannot listen on --public");
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

static limen_exposure *build(const char *src, size_t len, const char *name, limen_identity *ids,
                             const char *bound) {
  limen_exposure *e = NULL;
  check(limen_exposure_new((const uint8_t *)src, len, name, ids, bound, &e), name);
  uint8_t identity[256];
  size_t n;
  check(limen_exposure_identity(e, identity, sizeof identity, &n), "identity");
  printf("  %.*s ", (int)n, (const char *)identity);
  return e;
}

int main(int argc, char **argv) {
  const char *public_addr = NULL, *admin_path = NULL, *program = WITNESS_PROGRAM;
  const char *operator_name = NULL;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (strcmp(argv[i], "--public") == 0) public_addr = argv[i + 1];
    else if (strcmp(argv[i], "--admin-socket") == 0) admin_path = argv[i + 1];
    else if (strcmp(argv[i], "--program") == 0) program = argv[i + 1];
    else if (strcmp(argv[i], "--operator") == 0) operator_name = argv[i + 1];
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
  exposures[0].exposure = build(src, src_len, "public", pub, bound);
  printf("http://%s\n", bound);
  limen_identity_free(pub);

  exposures[1].listen_fd = listen_unix(admin_path);
  exposures[1].unix_socket = 1;
  limen_identity *admin = NULL;
  check(limen_identity_new(&admin), "identity");
  char me[32];
  snprintf(me, sizeof me, "uid:%u", (unsigned)getuid());
  check(limen_identity_add_grant(admin, operator_name ? operator_name : me, "operator"),
        "a grant");
  exposures[1].exposure = build(src, src_len, "admin", admin, admin_path);
  printf("unix:%s\n", admin_path);
  limen_identity_free(admin);
  free(src);
  fflush(stdout);

  struct pollfd *fds = NULL;
  while (!stopping) {
    fds = realloc(fds, (2 + nconns) * sizeof *fds);
    if (fds == NULL) die("out of memory");
    uint64_t now = mono_ns(), deadline = UINT64_MAX, d;
    for (int i = 0; i < 2; i++) {
      fds[i].fd = exposures[i].listen_fd;
      fds[i].events = POLLIN;
      if (limen_exposure_poll_timeout(exposures[i].exposure, &d) && d < deadline) deadline = d;
    }
    for (size_t i = 0; i < nconns; i++) {
      limen_str out;
      check(limen_front_pending_output(conns[i].front, &out), "pending output");
      fds[2 + i].fd = conns[i].fd;
      fds[2 + i].events = (short)((limen_front_wants_read(conns[i].front) ? POLLIN : 0) |
                                  (out.len > 0 ? POLLOUT : 0));
      if (limen_front_poll_timeout(conns[i].front, &d) && d < deadline) deadline = d;
    }
    int timeout = -1;
    if (deadline != UINT64_MAX) timeout = deadline <= now ? 0 : (int)((deadline - now) / 1000000 + 1);
    int ready = poll(fds, 2 + nconns, timeout);
    if (ready < 0 && errno != EINTR) die("poll failed");
    now = mono_ns();
    for (size_t i = 0; i < nconns && ready > 0; i++) {
      conn *c = &conns[i];
      short re = fds[2 + i].revents;
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
    for (int i = 0; i < 2; i++)
      if (ready > 0 && (fds[i].revents & POLLIN)) accept_on(&exposures[i]);
    for (size_t i = 0; i < nconns; i++)
      if (limen_front_poll_timeout(conns[i].front, &d) && d <= now) {
        check(limen_front_handle_timeout(conns[i].front, now), "a front's timeout");
        conns[i].dirty = 1;
      }
    for (int i = 0; i < 2; i++)
      if (limen_exposure_poll_timeout(exposures[i].exposure, &d) && d <= now) {
        check(limen_exposure_handle_timeout(exposures[i].exposure, now), "a timeout");
        pump(&exposures[i], now);
      }
    for (int again = 1; again;) {
      again = 0;
      for (size_t i = 0; i < nconns; i++)
        if (conns[i].dirty && !conns[i].closed) {
          conns[i].dirty = 0;
          service(&conns[i]);
          again = 1;
        }
    }
    size_t kept = 0;
    for (size_t i = 0; i < nconns; i++) {
      if (conns[i].closed || limen_front_is_closed(conns[i].front)) {
        close(conns[i].fd);
        limen_front_free(conns[i].front);
      } else {
        conns[kept++] = conns[i];
      }
    }
    nconns = kept;
  }
  for (size_t i = 0; i < nconns; i++) {
    close(conns[i].fd);
    limen_front_free(conns[i].front);
  }
  free(conns);
  free(fds);
  for (int i = 0; i < 2; i++) {
    close(exposures[i].listen_fd);
    limen_exposure_free(exposures[i].exposure);
  }
  unlink(admin_path);
  return 0;
}
