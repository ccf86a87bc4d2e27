# tests/soak/churn.jq: one summary line per iotriage --json sample, for tests/soak/churn.sh.
# Run as: jq -R -n -c --unbuffered --argjson kidmax BYTES -f churn.jq
# Every input line must be one JSON object (fromjson fails the run otherwise). State kept
# between lines: the previous sample's pid -> start_ticks, to find pids reused between two
# consecutive samples: the new holder must start without rates (it has no previous value).
def rates: (.read_bps, .write_bps, .cancelled_write_bps) | numbers;
def summary($prev; $kidmax):
  . as $s
  | [ .processes[] | select(($prev[.pid | tostring] // .start_ticks) != .start_ticks) ] as $re
  | [ .processes[] | select(.comm == "churn-kid") ] as $kids
  | {
      ts, interval_s,
      t: ($s.ts | floor),
      nproc: (.processes | length),
      ndev: (.devices | length),
      reused: ($re | length),
      reused_with_rate: ([ $re[] | select(.read_bps != null or .write_bps != null) ] | length),
      # rates of what the churn controls (other processes on the machine may legitimately
      # be fast): the churn processes and any task met under a reused pid
      max_bps: ([ (.processes[] | select(.comm | startswith("churn"))), $re[] | rates ] | max // 0),
      max_proc: ([ (.processes[] | select(.comm | startswith("churn"))), $re[] ] |
                 max_by([rates] | max // 0) // null | {pid, comm, read_bps, write_bps} ),
      min_bps: ([ .processes[] | rates ] | min // 0),
      kids: ($kids | length),
      kids_rated: ([ $kids[] | select(.write_bps != null) ] | length),
      kids_writing: ([ $kids[] | select((.write_bps // 0) > 0) ] | length),
      # bytes one kid moved this interval: never more than it moves in its whole life,
      # $kidmax of data per counter plus the directory and inode blocks the filesystem
      # charges to it (tests/soak/churn.c; 5 pages seen): twice $kidmax allowed.
      # interval_s is printed rounded to the ms, and an interval can be a few ms long (a
      # sample that catches up): take the longest it could have been.
      kid_max_bytes: ([ $kids[] | rates * $s.interval_s ] | max // 0),
      kid_over: ([ $kids[] | select([rates * ($s.interval_s + 0.0005)] | any(. > 2 * $kidmax)) |
                   {pid, start_ticks, read_bps, write_bps, cancelled_write_bps} ] | .[:3]),
      dev_neg: ([ .devices[] | (.r_s, .w_s, .rkb_s, .wkb_s, .util, .aqu_sz) | numbers | select(. < 0) ] | length)
    };
foreach (inputs | fromjson) as $s ({prev: {}};
  . as $st
  | { prev: ($s.processes | map({key: (.pid | tostring), value: .start_ticks}) | from_entries),
      out: ($s | summary($st.prev; $kidmax)) };
  .out)
