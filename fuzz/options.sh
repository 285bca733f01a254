# The options every run of a target uses, sourced by scripts/fuzz-smoke and
# fuzz/campaign so a campaign finds what CI would.
#
# Each target's dictionary, and how long an input may be: the machines get
# inputs past their 64 KiB limits, so the limits' paths and a quadratic path
# (fed byte by byte, it shows as a slow unit) are both reached.
fuzz_dict_of() {
  case $1 in
    json_tokenizer) echo fuzz/dict/json.dict ;;
    flow_*) echo fuzz/dict/flow.dict ;;
    jsonrpc | tool_conn | tool_toolkit | mcp_http | conformance_reply) echo fuzz/dict/tool.dict ;;
    tool_texts) echo fuzz/dict/flow.dict ;;
    *) if [ -f "fuzz/dict/$1.dict" ]; then echo "fuzz/dict/$1.dict"; fi ;;
  esac
}
fuzz_max_len_of() {
  case $1 in
    line_conn | http1_conn | http1_client | nats_client) echo 70000 ;;
    *) echo 4096 ;;
  esac
}
# The libFuzzer flags of target $1: 256 MiB of RSS at most, 3 s an input at
# most (the slowest unit of a healthy target is tens of milliseconds).
fuzz_flags_of() {
  echo -rss_limit_mb=256 -timeout=3 -max_len="$(fuzz_max_len_of "$1")" -print_final_stats=1
  local dict
  dict=$(fuzz_dict_of "$1")
  if [ -n "$dict" ]; then echo -dict="$dict"; fi
}
# Where cargo fuzz build puts the targets.
fuzz_bin_dir() {
  echo "fuzz/target/$(rustc -vV | sed -n 's/^host: //p')/release"
}
