/*
 * limen-canon [--schema FILE] --out DIR FILE...
 *
 * Canonicalizes JSON texts through limen's C ABI: each FILE is decoded
 * strictly at the schema's type (json.Value, `{}`, when no --schema is
 * given) and its canonical text written to DIR/<FILE's base name>. A text
 * that does not decode is listed on stdout as `refused <name> <pointer>:
 * <reason>`. The last line is `<n> canonical, <m> refused`. Exits 0 unless
 * a call fails for another reason than a refusal.
 *
 * The output buffer starts small and grows on LIMEN_RESULT_BUFFER_TOO_SMALL,
 * as the convention has a caller do.
 */
#define _POSIX_C_SOURCE 200809L
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "limen.h"

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

int main(int argc, char **argv) {
  const char *schema_path = NULL, *out_dir = NULL;
  int i = 1;
  for (; i + 1 < argc && strncmp(argv[i], "--", 2) == 0; i += 2) {
    if (strcmp(argv[i], "--schema") == 0) schema_path = argv[i + 1];
    else if (strcmp(argv[i], "--out") == 0) out_dir = argv[i + 1];
  }
  if (out_dir == NULL) {
    fprintf(stderr, "usage: limen-canon [--schema FILE] --out DIR FILE...\n");
    return 2;
  }
  char *schema_text;
  size_t schema_len;
  if (schema_path != NULL) {
    schema_text = read_file(schema_path, &schema_len);
    if (schema_text == NULL) {
      fprintf(stderr, "limen-canon: cannot read %s\n", schema_path);
      return 2;
    }
  } else {
    const char *any = "{\"$schema\":\"https://json-schema.org/draft/2020-12/schema\"}";
    schema_len = strlen(any);
    schema_text = malloc(schema_len);
    memcpy(schema_text, any, schema_len);
  }
  limen_flow_schema *schema = NULL;
  limen_result r = limen_flow_schema_new((const uint8_t *)schema_text, schema_len, &schema);
  free(schema_text);
  if (r != LIMEN_RESULT_OK) {
    fprintf(stderr, "limen-canon: %s: %s\n", limen_result_name((uint32_t)r), limen_last_error());
    return 2;
  }
  size_t cap = 64, canonical = 0, refused = 0;
  uint8_t *buf = malloc(cap);
  int status = 0;
  for (; i < argc; i++) {
    size_t len, written = 0;
    char *text = read_file(argv[i], &len);
    if (text == NULL) {
      fprintf(stderr, "limen-canon: cannot read %s\n", argv[i]);
      status = 2;
      continue;
    }
    for (;;) {
      r = limen_flow_canonical(schema, (const uint8_t *)text, len, buf, cap, &written);
      if (r != LIMEN_RESULT_BUFFER_TOO_SMALL) break;
      cap = written;
      uint8_t *more = realloc(buf, cap);
      if (more == NULL) {
        fprintf(stderr, "limen-canon: out of memory\n");
        return 2;
      }
      buf = more;
    }
    char *copy = strdup(argv[i]);
    const char *name = basename(copy);
    if (r == LIMEN_RESULT_OK) {
      char path[4096];
      snprintf(path, sizeof path, "%s/%s", out_dir, name);
      FILE *f = fopen(path, "wb");
      if (f == NULL || fwrite(buf, 1, written, f) != written) status = 2;
      if (f != NULL) fclose(f);
      canonical++;
    } else if (r == LIMEN_RESULT_REFUSED) {
      limen_flow_refusal why;
      limen_flow_schema_refusal(schema, &why);
      printf("refused %s %s: %s\n", name, why.pointer, why.reason);
      refused++;
    } else {
      fprintf(stderr, "limen-canon: %s: %s: %s\n", argv[i], limen_result_name((uint32_t)r),
              limen_last_error());
      status = 2;
    }
    free(copy);
    free(text);
  }
  printf("%zu canonical, %zu refused\n", canonical, refused);
  free(buf);
  limen_flow_schema_free(schema);
  return status;
}
