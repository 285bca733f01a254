/*
 * limen-tool-echo --listing FILE
 *
 * A Tool implementation in C over limen's C ABI (the toolkit connection):
 * serves the listing's `echo.flow.echo` (answers its text) and
 * `echo.flow.fail` (fails `Refused` with its reason) on its standard input
 * and output, as the Tool process protocol has an implementation do; every
 * other Tool of the listing answers NotRun. It exits once its input has
 * ended and every reply is written.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "limen.h"

static uint64_t mono_ns(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

static void check(limen_result r, const char *what) {
  if (r != LIMEN_RESULT_OK) {
    fprintf(stderr, "limen-tool-echo: %s: %s: %s\n", what, limen_result_name((uint32_t)r),
            limen_last_error());
    exit(70);
  }
}

static int ends_with(const char *s, const char *tail) {
  size_t n = strlen(s), m = strlen(tail);
  return n >= m && strcmp(s + n - m, tail) == 0;
}

/* The value of the args object's only member (`{"text":"hi"}` → `"hi"`),
 * canonical JSON as the library lends it. */
static int only_member(const uint8_t *args, size_t len, size_t *start, size_t *end) {
  size_t i = 1;
  if (len < 2 || args[0] != '{' || args[1] != '"') return 0;
  i = 2;
  while (i < len && args[i] != '"') i += args[i] == '\\' ? 2 : 1;
  if (i + 1 >= len || args[i + 1] != ':') return 0;
  *start = i + 2;
  *end = len - 1; /* before the closing brace */
  return *end > *start;
}

int main(int argc, char **argv) {
  if (argc != 3 || strcmp(argv[1], "--listing") != 0) {
    fprintf(stderr, "usage: limen-tool-echo --listing FILE\n");
    return 64;
  }
  FILE *f = fopen(argv[2], "rb");
  if (f == NULL) return 64;
  size_t cap = 1 << 16, n = 0, got;
  char *listing = malloc(cap);
  while (listing != NULL && (got = fread(listing + n, 1, cap - n, f)) > 0) {
    n += got;
    if (n == cap) {
      char *more = realloc(listing, cap *= 2);
      if (more == NULL) free(listing);
      listing = more;
    }
  }
  fclose(f);
  if (listing == NULL) return 70;
  limen_toolkit *kit = NULL;
  check(limen_toolkit_new((const uint8_t *)listing, n, &kit), "the listing");
  free(listing);
  fcntl(1, F_SETFL, fcntl(1, F_GETFL) | O_NONBLOCK);
  int input = 1;
  for (;;) {
    uint64_t now = mono_ns();
    for (;;) {
      limen_toolkit_event ev;
      check(limen_toolkit_poll_event(kit, &ev), "poll");
      if (ev.kind == LIMEN_TOOLKIT_EVENT_NONE) break;
      if (ev.kind != LIMEN_TOOLKIT_EVENT_CALL) continue;
      size_t s, e;
      int has = only_member(ev.text.ptr, ev.text.len, &s, &e);
      if (ends_with(ev.tool_name, ".echo") && has) {
        check(limen_toolkit_reply(kit, now, ev.run, ev.call, LIMEN_REPLY_OK, ev.text.ptr + s, e - s),
              "reply");
      } else if (ends_with(ev.tool_name, ".fail") && has) {
        char body[4096];
        int len = snprintf(body, sizeof body, "{\"Refused\":%.*s}", (int)(e - s),
                           (const char *)ev.text.ptr + s);
        check(limen_toolkit_reply(kit, now, ev.run, ev.call, LIMEN_REPLY_FAILED,
                                  (const uint8_t *)body, (size_t)len),
              "reply");
      } else {
        const char *why = "limen-tool-echo implements only echo and fail";
        check(limen_toolkit_reply(kit, now, ev.run, ev.call, LIMEN_REPLY_NOT_RUN,
                                  (const uint8_t *)why, strlen(why)),
              "reply");
      }
    }
    limen_str out;
    check(limen_toolkit_pending_output(kit, &out), "pending output");
    if (out.len > 0) {
      ssize_t w = write(1, out.ptr, out.len);
      if (w > 0) {
        check(limen_toolkit_consume_output(kit, mono_ns(), (size_t)w), "consume");
        continue;
      }
      if (w < 0 && errno != EAGAIN && errno != EINTR) break;
    } else if (!input && limen_toolkit_open_calls(kit) == 0) {
      break;
    }
    struct pollfd fds[2] = {{input ? 0 : -1, POLLIN, 0}, {out.len > 0 ? 1 : -1, POLLOUT, 0}};
    if (poll(fds, 2, -1) < 0 && errno != EINTR) break;
    if (input && (fds[0].revents & (POLLIN | POLLHUP | POLLERR))) {
      uint8_t buf[65536];
      ssize_t r = read(0, buf, sizeof buf);
      if (r > 0) {
        check(limen_toolkit_handle_data(kit, mono_ns(), buf, (size_t)r), "data");
      } else if (r == 0 || (errno != EAGAIN && errno != EINTR)) {
        input = 0;
        check(limen_toolkit_handle_eof(kit, mono_ns()), "eof");
      }
    }
  }
  limen_toolkit_free(kit);
  return 0;
}
