package config

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
)

// Unlimited is the value of a time limit that has none (Slurm's INFINITE,
// printed "UNLIMITED").
const Unlimited int64 = -1

// ErrInvalidTime and ErrInvalidMem are wrapped by ParseTime and ParseMem
// errors.
var (
	ErrInvalidTime = errors.New("invalid time specification")
	ErrInvalidMem  = errors.New("invalid memory specification")
)

// maxTimeField bounds each number of a time value so sums cannot overflow.
const maxTimeField = 1 << 31

// ParseTime reads a time limit in Slurm's syntax and returns minutes:
// "M", "M:S", "H:M:S", "D-H", "D-H:M", "D-H:M:S", or "UNLIMITED",
// "INFINITE" or "-1" for no limit (Unlimited, -1). Seconds round up to whole
// minutes ("0:30" is 1). A negative number of minutes ("-5") parses to its
// value: Slurm's client accepts it and the controller rejects it.
func ParseTime(s string) (int64, error) {
	t := strings.TrimSpace(s)
	switch strings.ToUpper(t) {
	case "UNLIMITED", "INFINITE", "-1":
		return Unlimited, nil
	}
	bad := func() (int64, error) { return 0, fmt.Errorf("%w %q", ErrInvalidTime, s) }
	if t == "" {
		return bad()
	}
	if t[0] == '-' { // "-5": negative minutes, passed on for the controller to reject
		v, ok := timeField(t[1:])
		if !ok {
			return bad()
		}
		return -v, nil
	}
	var days int64
	hasDays := false
	if d, rest, ok := strings.Cut(t, "-"); ok {
		v, ok := timeField(d)
		if !ok {
			return bad()
		}
		days, hasDays, t = v, true, rest
	}
	parts := strings.Split(t, ":")
	if len(parts) > 3 {
		return bad()
	}
	f := make([]int64, len(parts))
	for i, p := range parts {
		v, ok := timeField(p)
		if !ok {
			return bad()
		}
		f[i] = v
	}
	var h, m, sec int64
	switch {
	case hasDays && len(f) == 1: // D-H
		h = f[0]
	case hasDays && len(f) == 2: // D-H:M
		h, m = f[0], f[1]
	case len(f) == 3: // [D-]H:M:S
		h, m, sec = f[0], f[1], f[2]
	case len(f) == 2: // M:S
		m, sec = f[0], f[1]
	default: // M
		m = f[0]
	}
	total := days*86400 + h*3600 + m*60 + sec
	return (total + 59) / 60, nil
}

func timeField(s string) (int64, bool) {
	if s == "" || len(s) > 10 {
		return 0, false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return 0, false
		}
	}
	v, err := strconv.ParseInt(s, 10, 64)
	if err != nil || v >= maxTimeField {
		return 0, false
	}
	return v, true
}

// ParseMem reads a memory size as Slurm's --mem does and returns megabytes:
// a whole number with an optional suffix K, M, G or T (either case); no
// suffix means M. Kilobytes round up to whole megabytes.
func ParseMem(s string) (int64, error) {
	t := strings.TrimSpace(s)
	mult, div := int64(1), int64(1)
	if n := len(t); n > 0 {
		switch t[n-1] {
		case 'k', 'K':
			div = 1024
		case 'm', 'M':
		case 'g', 'G':
			mult = 1024
		case 't', 'T':
			mult = 1024 * 1024
		default:
			if t[n-1] < '0' || t[n-1] > '9' {
				return 0, fmt.Errorf("%w %q", ErrInvalidMem, s)
			}
			n++ // no suffix to strip
		}
		t = t[:n-1]
	}
	if t == "" || len(t) > 15 || strings.TrimLeft(t, "0123456789") != "" {
		return 0, fmt.Errorf("%w %q", ErrInvalidMem, s)
	}
	v, err := strconv.ParseInt(t, 10, 64)
	if err != nil || v > math.MaxInt64/mult {
		return 0, fmt.Errorf("%w %q", ErrInvalidMem, s)
	}
	return (v*mult + div - 1) / div, nil
}

// FormatTime prints a time limit in minutes as squeue and sinfo do: "0:00",
// "10:00", "1:00:00", "1-00:00:00"; "UNLIMITED" for Unlimited and "INVALID"
// for other negative values.
func FormatTime(min int64) string {
	if min == Unlimited {
		return "UNLIMITED"
	}
	return FormatSeconds(min * 60)
}

// FormatTimeLong prints a time limit in minutes as scontrol does
// (TimeLimit=00:10:00, 1-00:00:00, UNLIMITED).
func FormatTimeLong(min int64) string {
	if min == Unlimited {
		return "UNLIMITED"
	}
	return FormatSecondsLong(min * 60)
}

// FormatSeconds prints a duration in seconds in squeue's short form:
// "M:SS", "H:MM:SS" or "D-HH:MM:SS".
func FormatSeconds(sec int64) string {
	if sec < 0 {
		return "INVALID"
	}
	d, h, m, s := sec/86400, sec/3600%24, sec/60%60, sec%60
	switch {
	case d > 0:
		return fmt.Sprintf("%d-%02d:%02d:%02d", d, h, m, s)
	case h > 0:
		return fmt.Sprintf("%d:%02d:%02d", h, m, s)
	}
	return fmt.Sprintf("%d:%02d", m, s)
}

// FormatSecondsLong prints a duration in seconds as scontrol does:
// "HH:MM:SS" or "D-HH:MM:SS" (RunTime=00:00:04).
func FormatSecondsLong(sec int64) string {
	if sec < 0 {
		return "INVALID"
	}
	d, h, m, s := sec/86400, sec/3600%24, sec/60%60, sec%60
	if d > 0 {
		return fmt.Sprintf("%d-%02d:%02d:%02d", d, h, m, s)
	}
	return fmt.Sprintf("%02d:%02d:%02d", h, m, s)
}
