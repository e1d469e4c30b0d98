#!/usr/bin/awk -f
# Reads `go test -json` outputs (one file per run, as hack/stress.sh writes
# them) and prints each package's runs and failed runs, then each test that
# failed with how many times it passed and failed. A run that failed with no
# failed test (TestMain, a build error, a timeout's panic, a crash) counts as
# the package's "(run)"; a file with no result at all (the binary did not
# run) is named. Output lines start with FAIL or ok.

# field is the string value of "name" in a JSON event line, or "".
function field(line, name,    m) {
  if (match(line, "\"" name "\":\"[^\"]*\"")) {
    m = substr(line, RSTART, RLENGTH)
    sub("^\"" name "\":\"", "", m)
    sub("\"$", "", m)
    return m
  }
  return ""
}

FNR == 1 { file = FILENAME; files[file] = 1 }

/"Action":"(pass|fail)"/ {
  action = field($0, "Action"); pkg = field($0, "Package"); test = field($0, "Test")
  if (test == "") {
    pkgs[pkg] = 1
    ended[file] = 1
    runs[pkg]++
    if (action == "fail") { pkgfail[pkg]++; failedrun[file] = pkg }
    next
  }
  key = pkg SUBSEP test
  if (action == "fail") { fails[key]++; testfailed[file] = 1; testfails[pkg]++ } else { passes[key]++; testpasses[pkg]++ }
}

END {
  for (f in failedrun) {
    if (!(f in testfailed)) { fails[failedrun[f] SUBSEP "(run)"]++ }
  }
  for (pkg in pkgs) {
    printf "%-4s %s: %d runs, %d failed (tests and subtests: %d passed, %d failed)\n", (pkgfail[pkg] ? "FAIL" : "ok"), pkg, runs[pkg], pkgfail[pkg], testpasses[pkg], testfails[pkg]
  }
  for (key in fails) {
    split(key, k, SUBSEP)
    printf "FAIL %s %s: failed %d, passed %d\n", k[1], k[2], fails[key], passes[key]
  }
  for (f in files) {
    if (!(f in ended)) { printf "FAIL %s: no result (see the file)\n", f }
  }
}
