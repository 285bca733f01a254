/*
 * limen-tool-host --listing FILE --tool IDENTITY --args JSON
 *                 [--run ID] [--call ID] -- CMD [ARG...]
 *
 * A Tool host in C over limen's C ABI: calls the Tool IDENTITY (declared in
 * the listing FILE) with the args object JSON, its implementation the
 * process CMD speaking the Tool process protocol on its standard input and
 * output, which this program starts, feeds and reads with pipes and
 * poll(2). It prints the call's outcome as JSON (what `flow tools call`
 * prints) and exits 0 for Ok, 1 Failed, 2 NotRun, 3 Unknown, 4 BadReply, 5
 * when the call is refused before it is sent, 64 on a usage error.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "limen.h"

static uint64_t mono_ns(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

static char *read_file(const char *path, size_t *len) {
  FILE *f = fopen(path, "rb");
  if (f == NULL) return NULL;
  size_t cap = 4096, n = 0, got;
  char *buf = malloc(cap);
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

static void check(limen_result r, const char *what) {
  if (r != LIMEN_RESULT_OK) {
    fprintf(stderr, "limen-tool-host: %s: %s: %s\n", what, limen_result_name((uint32_t)r),
            limen_last_error());
    exit(70);
  }
}

static int exit_of(const uint8_t *outcome, size_t len) {
  const char *names[] = {"{\"Ok\":", "{\"Failed\":", "{\"NotRun\":", "{\"Unknown\":",
                         "{\"BadReply\":"};
  for (int i = 0; i < 5; i++) {
    size_t n = strlen(names[i]);
    if (len >= n && memcmp(outcome, names[i], n) == 0) return i;
  }
  return 70;
}

int main(int argc, char **argv) {
  const char *listing_path = NULL, *tool = NULL, *args = NULL, *run = "limen-tool-host",
             *call = "1";
  int i = 1;
  for (; i < argc && strcmp(argv[i], "--") != 0; i += 2) {
    if (i + 1 >= argc) break;
    if (strcmp(argv[i], "--listing") == 0) listing_path = argv[i + 1];
    else if (strcmp(argv[i], "--tool") == 0) tool = argv[i + 1];
    else if (strcmp(argv[i], "--args") == 0) args = argv[i + 1];
    else if (strcmp(argv[i], "--run") == 0) run = argv[i + 1];
    else if (strcmp(argv[i], "--call") == 0) call = argv[i + 1];
    else break;
  }
  if (listing_path == NULL || tool == NULL || args == NULL || i + 1 >= argc ||
      strcmp(argv[i], "--") != 0) {
    fprintf(stderr, "usage: limen-tool-host --listing FILE --tool IDENTITY --args JSON "
                    "[--run ID] [--call ID] -- CMD [ARG...]\n");
    return 64;
  }
  char **command = &argv[i + 1];
  size_t listing_len;
  char *listing = read_file(listing_path, &listing_len);
  if (listing == NULL) {
    fprintf(stderr, "limen-tool-host: cannot read %s\n", listing_path);
    return 64;
  }
  limen_tool_host *host = NULL;
  limen_result r = limen_tool_host_new((const uint8_t *)listing, listing_len, &host);
  free(listing);
  if (r != LIMEN_RESULT_OK) {
    fprintf(stderr, "limen-tool-host: %s\n", limen_last_error());
    return 5;
  }
  r = limen_tool_host_call(host, mono_ns(), run, call, tool, (const uint8_t *)args, strlen(args));
  if (r != LIMEN_RESULT_OK) {
    fprintf(stderr, "limen-tool-host: the call is refused: %s\n", limen_last_error());
    limen_tool_host_free(host);
    return 5;
  }
  signal(SIGPIPE, SIG_IGN);
  pid_t child = -1;
  int to = -1, from = -1, code = -1;
  char *outcome = NULL;
  size_t outcome_len = 0;
  int done = 0;
  while (!done || from >= 0) {
    uint64_t now = mono_ns();
    for (;;) {
      limen_tool_event ev;
      check(limen_tool_host_poll_event(host, &ev), "poll");
      if (ev.kind == LIMEN_TOOL_EVENT_NONE) break;
      if (ev.kind == LIMEN_TOOL_EVENT_START) {
        int in[2], out[2];
        if (pipe2(in, O_CLOEXEC) != 0 || pipe2(out, O_CLOEXEC) != 0) {
          check(limen_tool_host_start_failed(host, now, "no pipes"), "start failed");
          continue;
        }
        child = fork();
        if (child == 0) {
          dup2(in[0], 0);
          dup2(out[1], 1);
          execvp(command[0], command);
          _exit(127);
        }
        close(in[0]);
        close(out[1]);
        to = in[1];
        from = out[0];
        fcntl(to, F_SETFL, O_NONBLOCK);
        check(limen_tool_host_started(host, now), "started");
      } else if (ev.kind == LIMEN_TOOL_EVENT_STOP) {
        if (to >= 0) close(to);
        to = -1;
      } else if (ev.kind == LIMEN_TOOL_EVENT_CLOSED) {
        free(outcome);
        outcome = malloc(ev.text.len + 1);
        memcpy(outcome, ev.text.ptr, ev.text.len);
        outcome_len = ev.text.len;
        code = exit_of(ev.text.ptr, ev.text.len);
        done = 1;
        /* The call is over: end the process's input, read it to its end. */
        if (to >= 0) close(to);
        to = -1;
      } else if (ev.kind == LIMEN_TOOL_EVENT_DROPPED) {
        fprintf(stderr, "limen-tool-host: dropped: %.*s\n", (int)ev.text.len,
                (const char *)ev.text.ptr);
      }
    }
    if (done && from < 0) break;
    limen_str pending;
    check(limen_tool_host_pending_output(host, &pending), "pending output");
    if (pending.len > 0 && to >= 0) {
      ssize_t n = write(to, pending.ptr, pending.len);
      if (n > 0) {
        check(limen_tool_host_consume_output(host, mono_ns(), (size_t)n), "consume");
        continue;
      }
      if (n < 0 && errno != EAGAIN && errno != EINTR) {
        close(to);
        to = -1;
      }
    }
    if (from < 0) {
      if (done) break;
      continue;
    }
    struct pollfd fds[2] = {{from, POLLIN, 0}, {to, POLLOUT, 0}};
    int nfds = (pending.len > 0 && to >= 0) ? 2 : 1;
    uint64_t deadline;
    int timeout = -1;
    if (limen_tool_host_poll_timeout(host, &deadline))
      timeout = deadline <= now ? 0 : (int)((deadline - now) / 1000000 + 1);
    if (poll(fds, (nfds_t)nfds, timeout) < 0 && errno != EINTR) break;
    now = mono_ns();
    if (limen_tool_host_poll_timeout(host, &deadline) && deadline <= now)
      check(limen_tool_host_handle_timeout(host, now), "timeout");
    if (fds[0].revents & (POLLIN | POLLHUP | POLLERR)) {
      uint8_t buf[65536];
      ssize_t n = read(from, buf, sizeof buf);
      if (n > 0) {
        check(limen_tool_host_handle_data(host, now, buf, (size_t)n), "data");
      } else if (n == 0 || (errno != EAGAIN && errno != EINTR)) {
        close(from);
        from = -1;
        if (to >= 0) close(to);
        to = -1;
        check(limen_tool_host_handle_eof(host, now), "eof");
      }
    }
  }
  if (to >= 0) close(to);
  if (from >= 0) close(from);
  if (child > 0) waitpid(child, NULL, 0);
  if (outcome != NULL) printf("%.*s\n", (int)outcome_len, outcome);
  free(outcome);
  limen_tool_host_free(host);
  return code < 0 ? 70 : code;
}
