#!/usr/bin/env bash
# The long forms of the integration tests whose default run is short (ASKGATE_SOAK=1): twenty
# SIGKILL rounds on the embedded store, a minute of node kills and five Redis kills on three
# nodes, 1,100 sockets from one address at an open-file limit of 1,024, 240 tabs that never
# read, a hundred race rounds on three nodes and on a Redis cluster; then the protocol crate's
# properties with PROPTEST_CASES cases each (4,000 unless set; the default run has 256 to 2,000),
# and the differential tests against the real packages with 12,000 lines a seed (4,000 by
# default).
#
#   bench/soak.sh                  # all of them: 6 minutes on 2 shared cores (gateway 130 s,
#                                  # properties 119 s, differential 100 s)
#   bench/soak.sh crash::          # only the gateway tests whose names contain `crash::`
#
# A randomized gateway test prints its seed: ASKGATE_TEST_SEED=<seed> makes the same choices
# again (a crash round also depends on scheduling). proptest saves a failing case beside its
# module (`*.proptest-regressions`) and takes PROPTEST_RNG_SEED for a fixed seed.
set -euo pipefail
cd "$(dirname "$0")/.."

export ASKGATE_SOAK=1
cargo test -p askgate --test gateway -- "$@"
if [ "$#" -eq 0 ]; then
  PROPTEST_CASES="${PROPTEST_CASES:-4000}" cargo test -p askgate-protocol --test protocol
  cargo test -p askgate-tests --test integration -- differential_
fi
