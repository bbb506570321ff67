#!/usr/bin/env bash
# Runs the fuzz targets built in BUILD_DIR/fuzz/ (make fuzz-targets) and prints one table.
#
#   run.sh BUILD_DIR TARGET...            fuzz each target for $FUZZ_SECONDS (default 60), one after the other,
#                                         starting from the committed corpus tests/fuzz/corpus/TARGET/; new inputs
#                                         go to BUILD_DIR/corpus/TARGET/, crashes to BUILD_DIR/artifacts/TARGET/
#   run.sh --replay BUILD_DIR TARGET...   run every committed corpus file once, no fuzzing (the regression test)
#   run.sh --merge BUILD_DIR TARGET...    add to the committed corpus the inputs of BUILD_DIR/corpus/TARGET/ that
#                                         reach code it does not (libFuzzer -merge=1), then replay it
#
# Exit status 1 when any target crashed (each crashing input's path is printed), 0 otherwise. Logs of each run
# are kept in BUILD_DIR/logs/TARGET.log. Environment: FUZZ_SECONDS, FUZZ_TIMEOUT (seconds one input may take,
# default 10), FUZZ_RSS_MB (memory limit, default 2048), FUZZ_ARGS (more libFuzzer flags).
set -u

# Everything is in main, read whole before it runs: editing this file during a run cannot derail the run.
main() {
  cd "$(dirname "$0")/../.." || exit 2

  replay=0
  case ${1:-} in
    --replay) replay=1; shift ;;
    --merge) merge=1; replay=1; shift ;;
  esac
  build=${1:?usage: run.sh [--replay | --merge] BUILD_DIR TARGET...}
  shift
  seconds=${FUZZ_SECONDS:-60}
  mkdir -p "$build/logs"
  # the targets' scratch directories (one per process, left behind by a crash), on tmpfs when there is one
  local shm=/tmp
  [[ -w /dev/shm ]] && shm=/dev/shm
  VB_FUZZ_TMP=$(mktemp -d "$shm/vbench-fuzz-run.XXXXXX") || exit 2
  export VB_FUZZ_TMP
  trap 'rm -rf "$VB_FUZZ_TMP"' EXIT

  rows=()
  crashed=()
  for t in "$@"; do
    bin=$build/fuzz/$t
    seeds=tests/fuzz/corpus/$t
    log=$build/logs/$t.log
    art=$build/artifacts/$t
    mkdir -p "$art" "$build/corpus/$t"
    flags=(-timeout="${FUZZ_TIMEOUT:-10}" -rss_limit_mb="${FUZZ_RSS_MB:-2048}" -artifact_prefix="$art/")
    [[ -f tests/fuzz/$t.dict ]] && flags+=(-dict="tests/fuzz/$t.dict")
    dirs=("$build/corpus/$t")
    [[ -d $seeds ]] && dirs+=("$seeds")
    if [[ ${merge:-0} -eq 1 ]]; then
      mkdir -p "$seeds"
      n0=$(ls "$seeds" | wc -l)
      "$bin" -merge=1 "${flags[@]}" "$seeds" "$build/corpus/$t" >"$build/logs/$t.merge.log" 2>&1 ||
        { echo "merge of $t failed: see $build/logs/$t.merge.log"; exit 1; }
      echo "merge: $t: $(( $(ls "$seeds" | wc -l) - n0 )) new inputs in $seeds ($(du -sh --apparent-size "$seeds" | cut -f1))"
    fi
    if [[ $replay -eq 1 ]]; then
      files=()
      [[ -d $seeds ]] && files=("$seeds"/*)
      rc=0
      : >"$log"
      # without file arguments libFuzzer would start fuzzing
      [[ ${#files[@]} -eq 0 ]] || "$bin" "${flags[@]}" ${FUZZ_ARGS:-} "${files[@]}" >"$log" 2>&1 || rc=$?
      runs=$(grep -c '^Executed ' "$log")
      rate=-
      corpus="${#files[@]} files"
    else
      echo "fuzz: $t for ${seconds}s (log: $log)"
      rc=0
      "$bin" "${flags[@]}" -max_total_time="$seconds" -print_final_stats=1 ${FUZZ_ARGS:-} "${dirs[@]}" \
        >"$log" 2>&1 || rc=$?
      runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
      [[ -n $runs ]] || runs=$(grep -o '^#[0-9]*' "$log" | tail -1 | tr -d '#')
      rate=$(grep -o 'exec/s: [0-9]*' "$log" | tail -1 | sed 's/exec.s: //')
      corpus=$(grep -o 'corp: [0-9]*/[0-9]*[a-zA-Z]*' "$log" | tail -1 | sed 's/corp: //; s|/| files, |')
    fi
    crashes=0
    if [[ $rc -ne 0 ]]; then
      crashes=1
      # the input libFuzzer saved, or for a replay the corpus file that was running when it died
      path=$(sed -n 's/.*Test unit written to \(.*\)$/\1/p' "$log" | tail -1)
      [[ -n $path ]] || path=$(sed -n 's/^Running: //p' "$log" | tail -1)
      what=$(grep -m1 -o 'ERROR: [A-Za-z]*Sanitizer: [A-Za-z-]*\|fuzz invariant failed[^:]*\|ERROR: libFuzzer: [a-z-]*' \
             "$log" || echo "exit $rc")
      crashed+=("$t: ${path:-see $log} ($what)")
    fi
    rows+=("$(printf '%-14s %12s %8s  %-22s %7s' "$t" "${runs:-0}" "${rate:-?}" "${corpus:-?}" "$crashes")")
  done

  echo
  printf '%-14s %12s %8s  %-22s %7s\n' target runs exec/s corpus crashes
  for r in "${rows[@]}"; do echo "$r"; done
  if [[ ${#crashed[@]} -gt 0 ]]; then
    echo
    for c in "${crashed[@]}"; do echo "CRASH $c"; done
    exit 1
  fi
  exit 0
}

main "$@"
