#!/usr/bin/env bash
# Tests of tandem-judge (run by ctest as test_judge):
#   judge_test.sh JUDGE EXAMPLES_LIB_DIR FAULTY_LIB_DIR CC [MEMMOVE_SCALE [TIME_FACTOR]]
# - the correct example candidates pass;
# - each buggy candidate (and an unstable pairs sort) is caught within the default budget and shrunk to an
#   exact number of operations (a change in generators or shrinker shows),
#   the same output twice for the same seed, and the printed C program
#   compiles against the library and reproduces the difference;
# - a candidate that segfaults, hangs or leaks is reported (exit 3, 3, 1) and
#   the judge survives;
# - bad usage exits 2 with a clear message;
# - --bench writes CSV in tandem-bench's format.
# - third round: a B-tree with 255-key nodes and a borrow-from-left bug, and
#   a hash map that loses a key past 3,072 keys, each print a short program
#   (at most 60 lines; at most 16 calling lines) within 60 s;
# - a C++ candidate without extern "C" is told why its symbols are missing.
# TANDEM_TEST_SCALE (scripts/test-scale.sh): full runs every candidate with
# the default large tiers; small (the default) runs the same checks with the
# large tiers at a tenth of their size (--scale 0.1) where a check does not
# need the full size, and the pure pass runs without them (--scale 0): every
# candidate, every planted bug and every exact length stays checked.
# MEMMOVE_SCALE (default 1) is the --scale of the map runs of the two
# sorted-array candidates, whose inserts and erases memmove the array's tail:
# the sanitized builds pass 0.25, as ASan's memmove moves a byte at a time
# (its interceptor calls its own plain loop) and made those three runs 380 of
# the test's 515 s; at 0.25 their large tier is a sixteenth of the work.
# TIME_FACTOR (default 1) multiplies the time limits of the timed runs: the
# sanitized builds pass the suite's factor (the judge itself runs slower).
set -uo pipefail
. "$(dirname "$0")/../../scripts/test-scale.sh"
JUDGE=$1 EX=$2 FAULTY=$3 CC=$4 MSCALE=${5:-1} TFACTOR=${6:-1}
# PASS_SCALE: the --scale of the runs that must pass (large tiers: none at
# small scale, where the mid-size churn stages and short sequences remain).
if [ "$TDM_SCALE" = full ]; then PASS_SCALE=1; else PASS_SCALE=0.1; MSCALE=$(awk -v s="$MSCALE" 'BEGIN { print s / 10 }'); fi
T0=$(date +%s)
SEED=7
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
failures=0

fail() { echo "FAIL: $*"; failures=$((failures + 1)); }

# run NAME EXPECTED_STATUS ARGS...: runs the judge, output in $WORK/NAME.out
run() {
  local name=$1 want=$2 rc
  shift 2
  "$JUDGE" "$@" >"$WORK/$name.out" 2>&1
  rc=$?
  if [ "$rc" -ne "$want" ]; then
    fail "$name: exit status $rc, expected $want (tandem-judge $*)"
    sed 's/^/    /' "$WORK/$name.out" | head -40
    return 1
  fi
  echo "ok: $name (exit $rc)"
  return 0
}

# expect NAME REGEX: the output of run NAME matches
expect() {
  if ! grep -qE -- "$2" "$WORK/$1.out"; then
    fail "$1: output lacks /$2/"
    sed 's/^/    /' "$WORK/$1.out" | head -40
  fi
}

# repro NAME LIB STATUS: the C program in NAME's output, built against LIB,
# exits with STATUS ("signal" for death by a signal, "build" to only build it).
repro() {
  local name=$1 lib=$2 want=$3 dir="$WORK/$1-repro" rc
  mkdir -p "$dir"
  sed -n '/^-----8<-----$/,/^-----8<-----$/p' "$WORK/$name.out" | sed '1d;$d' >"$dir/repro.c"
  cp "$lib" "$dir/"
  if ! (cd "$dir" && "$CC" -std=c11 -Wall -Werror repro.c -o repro "$(basename "$lib")" -Wl,-rpath,'$ORIGIN' \
        >compile.log 2>&1); then
    fail "$name: the printed program does not compile"
    sed 's/^/    /' "$dir/compile.log" | head -20
    return
  fi
  [ "$want" = build ] && { echo "ok: $name: printed program builds"; return; }
  (cd "$dir" && ./repro >run.out 2>&1) 2>/dev/null # (no "Segmentation fault" line from the shell)
  rc=$?
  if [ "$want" = signal ]; then
    [ "$rc" -gt 128 ] || fail "$name: the printed program exited $rc, expected to die by a signal"
  elif [ "$rc" -ne "$want" ]; then
    fail "$name: the printed program exited $rc, expected $want"
    sed 's/^/    /' "$dir/run.out" | head -10
  fi
  if [ "$want" = 1 ] && ! grep -q "tandem says" "$dir/run.out"; then
    fail "$name: the printed program does not show the difference"
  fi
  [ "$want" = 1 ] && echo "ok: $name: printed program reproduces: $(head -1 "$dir/run.out")"
}

# shrunk NAME N: the report says it shrank to exactly N operations
shrunk() {
  local got
  got=$(sed -n 's/^shrunk to \([0-9]*\) operation.*/\1/p' "$WORK/$1.out")
  if [ "$got" != "$2" ]; then fail "$1: shrunk to '${got}' operations, expected $2"; else echo "ok: $1: shrunk to $2"; fi
}

echo "== correct candidates pass"
run btree_ordered 0 ordered "$EX/libjudge_btree.so" --seed $SEED --scale $PASS_SCALE && expect btree_ordered "^PASS: no difference"
run btree_as_map 0 map "$EX/libjudge_btree.so" --seed $SEED --scale $PASS_SCALE
run hashmap 0 map "$EX/libjudge_hashmap.so" --seed $SEED --scale $PASS_SCALE && expect hashmap "^PASS"
run sort_merge 0 sort "$EX/libjudge_sort_merge.so" --seed $SEED --scale $PASS_SCALE && expect sort_merge "^PASS"
run sorted_array 0 map "$FAULTY/libjudge_faulty_none.so" --seed $SEED --scale "$MSCALE"
expect sorted_array "optional judge_map_find_bulk not exported"

echo "== buggy candidates are caught and shrunk"
run split_bug 1 ordered "$EX/libjudge_btree_split_bug.so" --seed $SEED && {
  expect split_bug "^wrong result at operation"
  shrunk split_bug 5
  repro split_bug "$EX/libjudge_btree_split_bug.so" 1
}
run no_rebalance 1 ordered "$EX/libjudge_btree_no_rebalance.so" --seed $SEED && {
  shrunk no_rebalance 7
  repro no_rebalance "$EX/libjudge_btree_no_rebalance.so" 1
}
run erase_bug 1 map "$EX/libjudge_hashmap_erase_bug.so" --seed $SEED && {
  expect erase_bug "expected \(tandem\)"
  shrunk erase_bug 4
  repro erase_bug "$EX/libjudge_hashmap_erase_bug.so" 1
}
run unstable_sort 1 sort "$FAULTY/libjudge_unstable_sort.so" --seed $SEED && {
  expect unstable_sort "judge_sort_pairs_u64 \(3 elements\)"
  expect unstable_sort "values\[[0-9]+\] \(input position\)"
  shrunk unstable_sort 1
  repro unstable_sort "$FAULTY/libjudge_unstable_sort.so" 1
}
run bulk 1 map "$FAULTY/libjudge_faulty_bulk.so" --seed $SEED && {
  expect bulk "wrong result at operation [0-9]+ of [0-9]+: judge_map_find_bulk"
  expect bulk "value for keys\[2\]"
  repro bulk "$FAULTY/libjudge_faulty_bulk.so" 1
}
# The same seed gives the same report.
"$JUDGE" map "$EX/libjudge_hashmap_erase_bug.so" --seed $SEED >"$WORK/erase_bug2.out" 2>&1
cmp -s "$WORK/erase_bug.out" "$WORK/erase_bug2.out" && echo "ok: replay is identical" ||
  fail "two runs with --seed $SEED differ"

echo "== misbehaving candidates are reported, the judge survives"
run segv 3 map "$FAULTY/libjudge_faulty_segv.so" --seed $SEED && {
  expect segv "^crash in judge_map_erase"
  shrunk segv 1
  repro segv "$FAULTY/libjudge_faulty_segv.so" signal
}
run hang 3 map "$FAULTY/libjudge_faulty_hang.so" --seed $SEED --time 0.5 && {
  expect hang "^hang in judge_map_(find|insert|erase).*did not return within 0.5 s"
  repro hang "$FAULTY/libjudge_faulty_hang.so" build
}
run leak 1 map "$FAULTY/libjudge_faulty_leak.so" --seed $SEED && {
  expect leak "^leak: [0-9]+ blocks, [0-9]+ bytes allocated by the candidate still live"
  expect leak "^the leak starts at operation [0-9]+ of [0-9]+"
  shrunk leak 1
}

run ctor 3 map "$FAULTY/libjudge_faulty_ctor.so" && expect ctor "crashed \(signal 6\) in its constructors"

echo "== second round: no false alarms, large structures"
# calls NAME: lines of the printed program that call the candidate (at most 16)
calls() {
  local n
  n=$(sed -n '/^-----8<-----$/,/^-----8<-----$/p' "$WORK/$1.out" | grep -cE '^ .*judge_[a-z0-9_]+\((m|a|got|NULL)')
  if [ "$n" -gt 16 ]; then fail "$1: the printed program calls the candidate on $n lines (more than 16)"; else
    echo "ok: $1: the printed program calls the candidate on $n lines"; fi
}
# timed NAME LIMIT_S STATUS ARGS...: run, and fail when it took over LIMIT_S
# (times TIME_FACTOR; a sanitized judge also gets that much more shrink time,
# as its every trial is slower and the budget is wall-clock time)
timed() {
  local name=$1 lim=$(($2 * TFACTOR)) want=$3 t0 dt extra=()
  shift 3
  [ "$TFACTOR" -gt 1 ] && extra=(--shrink-time $((60 * TFACTOR)))
  t0=$(date +%s)
  run "$name" "$want" "$@" "${extra[@]}" || return 1
  dt=$(($(date +%s) - t0))
  if [ "$dt" -gt "$lim" ]; then fail "$name: took $dt s, more than $lim s"; else echo "ok: $name: $dt s"; fi
}
# lines NAME MAX: the printed program has at most MAX lines
lines() {
  local n
  n=$(sed -n '/^-----8<-----$/,/^-----8<-----$/p' "$WORK/$1.out" | sed '1d;$d' | wc -l)
  if [ "$n" -gt "$2" ]; then fail "$1: the printed program has $n lines (more than $2)"; else
    echo "ok: $1: the printed program has $n lines"; fi
}
live=$(awk -v s="$MSCALE" 'BEGIN { printf "%d", 100000 * s }')
# Below the mid-size churn stage (4,000 keys, up to a quarter more live
# during its rounds: 5,000 seen), the largest map is that stage's.
[ "$live" -lt 5000 ] && live="[45][0-9]{3}"
sorted=$(awk -v s="$PASS_SCALE" 'BEGIN { n = 1000000 * s; printf "%d", n < 100000 ? 100000 : n }')
for k in ordered map sort; do
  scale=$MSCALE
  [ $k = sort ] && scale=$PASS_SCALE # qsort sorts: no memmove
  run qsort_$k 0 $k "$FAULTY/libjudge_qsort_map.so" --seed $SEED --scale "$scale" && {
    expect qsort_$k "^leaks: none"
    expect qsort_$k "^checked: (maps up to $live live keys|sorts up to $sorted elements)"
  }
done
run stl_map 0 ordered "$FAULTY/libjudge_stl_map.so" --seed $SEED --scale $PASS_SCALE && expect stl_map "^leaks: none"
run stl_umap 0 map "$FAULTY/libjudge_stl_umap.so" --seed $SEED --scale $PASS_SCALE && expect stl_umap "^leaks: none"
run stl_sort 0 sort "$FAULTY/libjudge_stl_sort.so" --seed $SEED --scale $PASS_SCALE && expect stl_sort "^leaks: none"
run big_none 0 map "$FAULTY/libjudge_big_none.so" --seed $SEED --scale $PASS_SCALE && expect big_none "resizes seen"
timed past_3000 60 1 map "$FAULTY/libjudge_big_past_3000.so" --seed $SEED && {
  expect past_3000 "churn at [0-9]+ keys"
  calls past_3000
  repro past_3000 "$FAULTY/libjudge_big_past_3000.so" 1
}
# The issue's second shape: an ordered map's rank off by one past 3,000 keys.
timed rank_past_3000 60 1 ordered "$FAULTY/libjudge_rank_past_3000.so" --seed $SEED && {
  calls rank_past_3000
  repro rank_past_3000 "$FAULTY/libjudge_rank_past_3000.so" 1
}
run at_20000 1 map "$FAULTY/libjudge_big_at_20000.so" --seed $SEED && {
  expect at_20000 "for \(i = 0; i < 20000; i\+\+\)"
  calls at_20000
  repro at_20000 "$FAULTY/libjudge_big_at_20000.so" 1
}
run hang_100 3 map "$FAULTY/libjudge_big_hang_100.so" --seed $SEED --time 0.5 && {
  expect hang_100 "^hang in judge_map_find .*no progress; size 1[0-9][0-9]\)"
  repro hang_100 "$FAULTY/libjudge_big_hang_100.so" build
}
run quadratic 3 sort "$FAULTY/libjudge_big_none.so" --seed $SEED && {
  expect quadratic "^too slow at n = [0-9]+"
  repro quadratic "$FAULTY/libjudge_big_none.so" build
}

echo "== third round: short programs for bugs only a large structure shows, within 60 s"
b255_seeds="$SEED"
[ "$TDM_SCALE" = full ] && b255_seeds="$SEED 1 2 3"
for s in $b255_seeds; do
  timed btree255_$s 60 1 ordered "$FAULTY/libjudge_btree255_borrow_bug.so" --seed "$s" && {
    expect btree255_$s "^the same kind of workload at a smaller size fails the same way"
    lines btree255_$s 60
    repro btree255_$s "$FAULTY/libjudge_btree255_borrow_bug.so" 1
  }
done
# The time budget: a budget too short for the shrink still prints a program, marked.
run btree255_budget 1 ordered "$FAULTY/libjudge_btree255_borrow_bug.so" --seed $SEED --shrink-time 0.2 && {
  expect btree255_budget "not minimal: the shrink time ran out"
  repro btree255_budget "$FAULTY/libjudge_btree255_borrow_bug.so" 1
}
# past_3000 above is timed too (its shrink starts from the mid-size stage);
# at full scale another seed.
if [ "$TDM_SCALE" = full ]; then
  timed past_3000_1 60 1 map "$FAULTY/libjudge_big_past_3000.so" --seed 1 && calls past_3000_1
fi
run mangled 2 map "$FAULTY/libjudge_mangled.so"
expect mangled 'C\+\+ mangled names: declare them extern "C"'

run no_tiers 0 map "$EX/libjudge_hashmap.so" --seed $SEED --scale 0
expect no_tiers "and 0 large ones"

echo "== bad usage: exit 2 with a message"
run no_args 2
expect no_args "needs a KIND and a library"
run bad_kind 2 tree "$EX/libjudge_btree.so"
expect bad_kind "unknown KIND 'tree'"
run no_file 2 map "$WORK/does-not-exist.so"
expect no_file "cannot load the candidate library"
run not_a_lib 2 map "$WORK/no_args.out"
expect not_a_lib "cannot load the candidate library"
run bare_name 2 map libjudge_btree.so
expect bare_name "give the library as a path"
run missing_sym 2 map "$FAULTY/libjudge_faulty_no_find.so"
expect missing_sym "does not export the symbol\(s\) kind 'map' requires: judge_map_find"
run wrong_kind 2 sort "$EX/libjudge_btree.so"
expect wrong_kind "requires: judge_sort_u32 judge_sort_u64"
run bad_option 2 map "$EX/libjudge_btree.so" --frobnicate
expect bad_option "unknown option '--frobnicate'"
run bad_number 2 map "$EX/libjudge_btree.so" --ops many
expect bad_number "--ops: 'many' is not a non-negative integer"
run extra_arg 2 map "$EX/libjudge_btree.so" surplus
expect extra_arg "unexpected argument 'surplus'"
# Options may come first and as --opt=VALUE.
run options_first 0 --seed=$SEED --ops 500 map "$EX/libjudge_hashmap.so"
expect options_first "seed $SEED "
run bad_time 2 map "$EX/libjudge_btree.so" --time -1
run missing_value 2 map "$EX/libjudge_btree.so" --seed
expect missing_value "--seed needs a value"

echo "== --bench"
HEADER="structure,operation,impl,backend,key_type,value_type,n,queries,threads,reps,median_mops,min_mops,max_mops"
check_csv() { # NAME ROWS_OF_CANDIDATE
  local name=$1 rows=$2
  "$JUDGE" "${@:3}" >"$WORK/$name.csv" 2>"$WORK/$name.err" || { fail "$name: --bench failed"; cat "$WORK/$name.err"; return; }
  [ "$(head -1 "$WORK/$name.csv")" = "$HEADER" ] || fail "$name: CSV header differs"
  [ "$(grep -c ",$(basename "${4}")," "$WORK/$name.csv")" = "$rows" ] || fail "$name: expected $rows candidate rows"
  grep -q ",tandem,cpu," "$WORK/$name.csv" || fail "$name: no tandem rows"
  awk -F, 'NR > 1 && NF != 13 { bad = 1 } END { exit bad }' "$WORK/$name.csv" || fail "$name: a row without 13 fields"
  grep -q "^PASS" "$WORK/$name.err" || fail "$name: the report did not go to stderr"
  echo "ok: $name: $(($(wc -l <"$WORK/$name.csv") - 1)) CSV rows"
}
check_csv bench_map 4 map "$EX/libjudge_hashmap.so" --seed $SEED --ops 2000 --bench --n 20000
check_csv bench_ordered 5 ordered "$EX/libjudge_btree.so" --seed $SEED --ops 2000 --bench --n 20000
check_csv bench_sort 3 sort "$EX/libjudge_sort_merge.so" --seed $SEED --ops 20 --bench --n 20000

echo "test_judge ($TDM_SCALE scale): $(($(date +%s) - T0)) s"
if [ "$failures" -ne 0 ]; then
  echo "$failures check(s) failed"
  exit 1
fi
echo "all tandem-judge checks passed"
