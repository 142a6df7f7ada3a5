package format

import (
	"fmt"
	"strconv"
	"time"
)

// Elapsed formats a duration the way squeue prints its TIME, TIME_LEFT and
// TIME_LIMIT columns: "0:04", "12:34", "1:02:03", "1-02:03:04". Fractions of
// a second are dropped; negative durations print as "INVALID", as squeue does.
func Elapsed(d time.Duration) string {
	return squeueSecs(int64(d / time.Second))
}

// squeueSecs is squeue's _print_secs.
func squeueSecs(secs int64) string {
	if secs < 0 || secs > 365*24*3600 {
		return "INVALID"
	}
	days := secs / 86400
	hours := (secs / 3600) % 24
	mins := (secs / 60) % 60
	s := secs % 60
	switch {
	case days > 0:
		return fmt.Sprintf("%d-%02d:%02d:%02d", days, hours, mins, s)
	case hours > 0:
		return fmt.Sprintf("%d:%02d:%02d", hours, mins, s)
	default: // most lines of a long queue: without fmt
		var b [8]byte
		out := append(strconv.AppendInt(b[:0], mins, 10), ':', byte('0'+s/10), byte('0'+s%10))
		return string(out)
	}
}

// sinfoSecs is sinfo's _print_secs: like squeue's but without the one-year
// sanity limit.
func sinfoSecs(secs int64) string {
	if secs < 0 {
		return "INVALID"
	}
	days := secs / 86400
	hours := (secs / 3600) % 24
	mins := (secs / 60) % 60
	s := secs % 60
	switch {
	case days > 0:
		return fmt.Sprintf("%d-%02d:%02d:%02d", days, hours, mins, s)
	case hours > 0:
		return fmt.Sprintf("%d:%02d:%02d", hours, mins, s)
	default:
		return fmt.Sprintf("%d:%02d", mins, s)
	}
}

// ElapsedHMS formats a duration as sacct's Elapsed and scontrol's RunTime:
// "00:00:06", "01:02:03", "1-02:03:04" (Slurm's secs2time_str). Negative
// durations print as "INVALID".
func ElapsedHMS(d time.Duration) string {
	return secs2time(int64(d / time.Second))
}

func secs2time(secs int64) string {
	if secs < 0 {
		return "INVALID"
	}
	days := secs / 86400
	hours := (secs / 3600) % 24
	mins := (secs / 60) % 60
	s := secs % 60
	if days > 0 {
		return fmt.Sprintf("%d-%02d:%02d:%02d", days, hours, mins, s)
	}
	return fmt.Sprintf("%02d:%02d:%02d", hours, mins, s)
}

// mins2time is Slurm's mins2time_str, used by scontrol's TimeLimit:
// "00:10:00", "1-00:00:00", "UNLIMITED" for a negative (infinite) limit.
func mins2time(min int64) string {
	if min < 0 {
		return "UNLIMITED"
	}
	return secs2time(min * 60)
}

// TimeLimit formats a time limit given in minutes the way squeue prints
// TIME_LIMIT: "10:00", "2:00:00", "1-00:00:00"; a negative limit means no
// limit and prints "UNLIMITED".
func TimeLimit(min int64) string {
	if min < 0 {
		return "UNLIMITED"
	}
	return squeueSecs(min * 60)
}

// ISOTime formats t in local time as Slurm prints dates:
// "2026-11-30T04:59:28"; the zero time prints "Unknown".
func ISOTime(t time.Time) string {
	if t.IsZero() {
		return "Unknown"
	}
	return t.Local().Format("2006-01-02T15:04:05")
}

// CTime formats t in local time like C's ctime(3), without the newline:
// "Mon Nov 30 04:59:33 2026". squeue -l and sinfo -l print it first.
func CTime(t time.Time) string {
	return t.Local().Format("Mon Jan _2 15:04:05 2006")
}

// dateOrNA is squeue's _print_time: an ISO date, or "N/A" for the zero time.
func dateOrNA(t time.Time) string {
	if t.IsZero() {
		return "N/A"
	}
	return ISOTime(t)
}
