#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Process and thread churn for 20 s under the sanitized iotriage (tests/soak/churn.sh, where
# every check is listed; `make soak` runs the same for 10 minutes).
. "$(dirname "$0")/lib.sh"
churn_lock
"$ROOT/tests/soak/churn.sh" "${SOAK_SMOKE_SECONDS:-20}"
