#!/usr/bin/env bash
# Bad input gets a clear error naming the file, line and key (profile) or the array (dataset), and nothing
# half-written is left behind as if it were a result.
. "$(dirname "$0")/../lib/lib.sh"

# A profile with a wrong key on line 6.
cat >"$SCRATCH/bad.yml" <<'YML'
name: bad
k: 10
datasets:
  - name: tiny
    source: synthetic
    rowz: 1000
engines:
  - name: exact
phases:
  build: {}
YML
out=$("$VBENCH" run --profile "$SCRATCH/bad.yml" --out "$SCRATCH/bad.sqlite" 2>&1)
rc=$?
is "$rc" "2" "a malformed profile exits 2"
like "$out" "bad.yml:6" "the error names the file and line"
like "$out" "rowz" "the error names the key"
[ ! -e "$SCRATCH/bad.sqlite" ]; ok $? "no results database is created for a profile that does not load"

# A wrong type.
sed -e 's/rowz: 1000/rows: many/' "$SCRATCH/bad.yml" >"$SCRATCH/bad2.yml"
out=$("$VBENCH" run --profile "$SCRATCH/bad2.yml" --out "$SCRATCH/bad2.sqlite" 2>&1)
like "$out" "bad2.yml:6" "a wrong type names the line"
like "$out" "rows" "a wrong type names the key"

# A number outside its range is refused at its line before anything is made (issue 36.11: rows: 0 passed the
# check, the results folder and file were created, and only the build failed): no folder, no file.
sed -e 's/rowz: 1000/rows: 0/' "$SCRATCH/bad.yml" >"$SCRATCH/bad0.yml"
out=$("$VBENCH" run --profile "$SCRATCH/bad0.yml" --out "$SCRATCH/new-folder/r.sqlite" 2>&1)
rc=$?
is "$rc" "2" "rows: 0 exits 2, as a malformed profile"
like "$out" "bad0.yml:6: key 'datasets[0].rows': 0 is outside [1, 1000000000]" "rows: 0 is refused naming the line, the key and the range"
[ ! -e "$SCRATCH/new-folder" ]; ok $? "rows: 0 creates neither the results file nor its folder"
sed -e 's/rowz: 1000/dim: 70000/' "$SCRATCH/bad.yml" >"$SCRATCH/bad0.yml"
out=$("$VBENCH" run --profile "$SCRATCH/bad0.yml" --out "$SCRATCH/new-folder/r.sqlite" 2>&1)
like "$out" "bad0.yml:6: key 'datasets[0].dim': 70000 is outside [1, 65536]" "dim above its maximum is refused at its line"
[ ! -e "$SCRATCH/new-folder" ]; ok $? "and nothing is created"

# An unknown engine parameter names its line too.
printf 'name: p\ndatasets:\n  - name: t\n    source: synthetic\n    rows: 100\n    dim: 4\n    metric: euclidean\nengines:\n  - name: hnswlib\n    mm: 16\nphases:\n  build: {}\n' >"$SCRATCH/bad3.yml"
out=$("$VBENCH" run --profile "$SCRATCH/bad3.yml" --out "$SCRATCH/bad3.sqlite" 2>&1)
like "$out" "bad3.yml:10" "an unknown engine parameter names the line"
like "$out" "mm" "an unknown engine parameter names the key"

# An unknown profile name lists the built-in ones.
out=$("$VBENCH" run --profile no-such-profile 2>&1)
like "$out" "dev" "an unknown profile name lists the built-in profiles"

# An HDF5 file without `test`: the build fails with the array named; no build or sweep row is written.
/usr/bin/python3 - "$SCRATCH/notest.hdf5" <<'PY'
import sys, h5py, numpy as np
with h5py.File(sys.argv[1], "w") as f:
    f.attrs["distance"] = "euclidean"
    f.create_dataset("train", data=np.random.default_rng(1).random((500, 8), dtype=np.float32))
PY
cat >"$SCRATCH/h5.yml" <<YML
name: h5
datasets:
  - name: notest
    source: hdf5
    path: $SCRATCH/notest.hdf5
engines:
  - name: exact
phases:
  build: {}
  recall_sweep:
    ef_search: [10, 20]
YML
"$VBENCH" run --profile "$SCRATCH/h5.yml" --out "$SCRATCH/h5.sqlite" >"$SCRATCH/h5.out" 2>&1
rc=$?
is "$rc" "1" "a campaign whose dataset is broken exits 1 (items failed)"
err=$(q "$SCRATCH/h5.sqlite" "SELECT error FROM plan WHERE phase = 'build'")
like "$err" "'test'" "the recorded error names the missing array"
like "$err" "notest.hdf5" "the recorded error names the file"
like "$(cat "$SCRATCH/h5.out")" "'test'" "the terminal shows the same error"
is "$(q "$SCRATCH/h5.sqlite" "SELECT COUNT(*) FROM build_result") $(q "$SCRATCH/h5.sqlite" "SELECT COUNT(*) FROM sweep_result")" "0 0" "no result rows for the failed dataset"
is "$(q "$SCRATCH/h5.sqlite" "SELECT group_concat(status) FROM plan WHERE phase = 'recall_sweep'")" "skipped,skipped" "the sweep items are skipped with the reason"
is "$(q "$SCRATCH/h5.sqlite" "SELECT status FROM campaign")" "failed" "the campaign is marked failed"

# A truncated HDF5 file (the first 40 % of a good one, as an interrupted copy leaves it): the failure says so with the
# file's size against the end its superblock declares, and the HDF5 library closes cleanly at exit (a failed open
# left its error stack behind, and in the agent's thread that made it print "infinite loop closing library").
/usr/bin/python3 - "$SCRATCH/whole.hdf5" <<'PY'
import sys, h5py, numpy as np
with h5py.File(sys.argv[1], "w") as f:
    f.attrs["distance"] = "euclidean"
    f.create_dataset("train", data=np.random.default_rng(1).random((2000, 16), dtype=np.float32))
    f.create_dataset("test", data=np.random.default_rng(2).random((50, 16), dtype=np.float32))
PY
whole=$(stat -c %s "$SCRATCH/whole.hdf5")
cut=$((whole * 2 / 5))
head -c "$cut" "$SCRATCH/whole.hdf5" >"$SCRATCH/cut.hdf5"
sed -e "s|$SCRATCH/notest.hdf5|$SCRATCH/cut.hdf5|" -e 's/name: notest/name: cut/' "$SCRATCH/h5.yml" >"$SCRATCH/cut.yml"
"$VBENCH" run --profile "$SCRATCH/cut.yml" --out "$SCRATCH/cut.sqlite" >"$SCRATCH/cut.out" 2>&1
is "$?" "1" "a campaign on a truncated HDF5 file exits 1 (items failed)"
err=$(q "$SCRATCH/cut.sqlite" "SELECT error FROM plan WHERE phase = 'build'")
like "$err" "cut.hdf5: cannot open as HDF5: truncated: the file has $cut bytes, its superblock (version 0) says it ends at byte $whole" \
    "the recorded error says the file is truncated: its size against the end its superblock declares"
like "$(grep '^preflight: warn dataset cut' "$SCRATCH/cut.out")" "truncated: the file has $cut bytes" "the preflight says so before the run"
unlike "$(cat "$SCRATCH/cut.out")" "infinite loop closing library" \
    "no process prints HDF5's 'infinite loop closing library' at exit (its error stack is cleared)"
head -c 20 "$SCRATCH/whole.hdf5" >"$SCRATCH/cut.hdf5"
"$VBENCH" run --profile "$SCRATCH/cut.yml" --out "$SCRATCH/cut2.sqlite" >"$SCRATCH/cut2.out" 2>&1
like "$(q "$SCRATCH/cut2.sqlite" "SELECT error FROM plan WHERE phase = 'build'")" \
    "truncated: the file has 20 bytes and ends inside its superblock" "a file cut inside its superblock says so"
unlike "$(cat "$SCRATCH/cut2.out")" "infinite loop closing library" "and closes the HDF5 library cleanly too"

# --help on every command.
for c in run resume status show engines; do
    "$VBENCH" $c --help >"$SCRATCH/help.txt" 2>&1
    rc=$?
    [ $rc -eq 0 ] && grep -q "usage: vbench $c" "$SCRATCH/help.txt"
    ok $? "vbench $c --help"
done
"$VB_BIN/vbench-agent" --help | grep -q "usage: vbench-agent"
ok $? "vbench-agent --help"
done_testing
