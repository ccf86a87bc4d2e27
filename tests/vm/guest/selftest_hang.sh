# SPDX-License-Identifier: GPL-2.0-or-later
# Not a test of iotriage: the lane's own check that a guest which stops answering is
# killed, booted once more and then failed loudly (tests/integration/test_vm_selftest.sh
# runs it by name; "all" runs only test_*.sh). It says one line, stops the guest's tick,
# then nothing: to the host, a guest that froze.
echo "selftest: going quiet"
kill "$(cat /run/ticker.pid)"
sleep 100000
