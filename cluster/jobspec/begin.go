package jobspec

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// ParseBegin reads a --begin time in the forms Slurm's sbatch accepts,
// relative to now (in now's location):
//
//   - now, now+N or now-N with an optional unit: seconds (the default),
//     minutes, hours, days, weeks (any prefix of at least three letters,
//     or s, h, d, w): now+1hour, now+30minutes, now+60;
//   - a time of day HH:MM[:SS], optionally followed by AM or PM: today, or
//     tomorrow when that time has passed;
//   - a date YYYY-MM-DD, MM/DD, MM/DD/YY, MM.DD or MMDDYY, optionally with
//     a time (YYYY-MM-DDTHH:MM[:SS], MM/DD-HH:MM); a date without a year is
//     this year's, or next year's when it has passed;
//   - midnight, noon, elevenses (11:00), fika (15:00), teatime (16:00),
//     today, tomorrow.
func ParseBegin(s string, now time.Time) (time.Time, error) { return parseTime(s, now, false) }

// ParseSince reads a time as ParseBegin does, but looking back, as sacct's
// --starttime and --endtime do: a time of day later than now is
// yesterday's, "noon" is today's or yesterday's, a date without a year
// later than today is last year's, and "midnight" is the one that began
// today.
func ParseSince(s string, now time.Time) (time.Time, error) { return parseTime(s, now, true) }

func parseTime(s string, now time.Time, past bool) (time.Time, error) {
	v := strings.TrimSpace(s)
	bad := fmt.Errorf("invalid time specification %q", s)
	if v == "" {
		return time.Time{}, bad
	}
	low := strings.ToLower(v)
	loc := now.Location()
	midnight := time.Date(now.Year(), now.Month(), now.Day(), 0, 0, 0, 0, loc)
	// roll moves a time of day to tomorrow if it has passed (or, looking
	// back, to yesterday if it is yet to come).
	roll := func(t time.Time) time.Time {
		switch {
		case !past && t.Before(now):
			return t.AddDate(0, 0, 1)
		case past && t.After(now):
			return t.AddDate(0, 0, -1)
		}
		return t
	}
	at := func(h, m int) time.Time {
		return roll(midnight.Add(time.Duration(h)*time.Hour + time.Duration(m)*time.Minute))
	}
	switch low {
	case "now":
		return now, nil
	case "today":
		return midnight, nil
	case "tomorrow":
		return midnight.AddDate(0, 0, 1), nil
	case "midnight":
		if past {
			return midnight, nil
		}
		return midnight.AddDate(0, 0, 1), nil
	case "noon":
		return at(12, 0), nil
	case "elevenses":
		return at(11, 0), nil
	case "fika":
		return at(15, 0), nil
	case "teatime":
		return at(16, 0), nil
	}
	if rest, ok := strings.CutPrefix(low, "now"); ok {
		d, err := delta(rest)
		if err != nil {
			return time.Time{}, bad
		}
		return now.Add(d), nil
	}
	// A date, possibly with a time after 'T' (ISO) or '-' (MM/DD-HH:MM).
	if strings.Count(low, "-") >= 2 { // YYYY-MM-DD[THH:MM[:SS]]
		date, clock, hasClock := strings.Cut(low, "t")
		t, err := time.ParseInLocation("2006-01-02", date, loc)
		if err != nil {
			return time.Time{}, bad
		}
		if hasClock {
			h, m, sec, err := clockTime(clock)
			if err != nil {
				return time.Time{}, bad
			}
			t = t.Add(time.Duration(h)*time.Hour + time.Duration(m)*time.Minute + time.Duration(sec)*time.Second)
		}
		return t, nil
	}
	if strings.ContainsAny(low, "/.") || (len(low) == 6 || len(low) == 4) && isDigits(low) {
		date, clock, hasClock := strings.Cut(low, "-")
		t, err := monthDay(date, now, past)
		if err != nil {
			return time.Time{}, bad
		}
		if hasClock {
			h, m, sec, err := clockTime(clock)
			if err != nil {
				return time.Time{}, bad
			}
			t = t.Add(time.Duration(h)*time.Hour + time.Duration(m)*time.Minute + time.Duration(sec)*time.Second)
		}
		return t, nil
	}
	h, m, sec, err := clockTime(low)
	if err != nil {
		return time.Time{}, bad
	}
	return roll(midnight.Add(time.Duration(h)*time.Hour + time.Duration(m)*time.Minute + time.Duration(sec)*time.Second)), nil
}

// delta reads "+N[unit]" or "-N[unit]" after "now"; "" is no offset.
func delta(s string) (time.Duration, error) {
	if s == "" {
		return 0, nil
	}
	sign := time.Duration(1)
	switch s[0] {
	case '+':
	case '-':
		sign = -1
	default:
		return 0, fmt.Errorf("bad offset")
	}
	s = s[1:]
	i := 0
	for i < len(s) && s[i] >= '0' && s[i] <= '9' {
		i++
	}
	if i == 0 || i > 9 {
		return 0, fmt.Errorf("bad offset")
	}
	n, _ := strconv.Atoi(s[:i])
	unit := time.Second
	switch u := s[i:]; {
	case u == "" || u == "s" || prefixOf(u, "seconds", 3):
	case prefixOf(u, "minutes", 3):
		unit = time.Minute
	case u == "h" || prefixOf(u, "hours", 3):
		unit = time.Hour
	case u == "d" || prefixOf(u, "days", 3):
		unit = 24 * time.Hour
	case u == "w" || prefixOf(u, "weeks", 3):
		unit = 7 * 24 * time.Hour
	default:
		return 0, fmt.Errorf("bad unit")
	}
	return sign * time.Duration(n) * unit, nil
}

// prefixOf reports whether u is a prefix of word at least min long.
func prefixOf(u, word string, min int) bool {
	return len(u) >= min && strings.HasPrefix(word, u)
}

func isDigits(s string) bool {
	return s != "" && strings.TrimLeft(s, "0123456789") == ""
}

// clockTime reads HH:MM[:SS] with an optional am/pm suffix.
func clockTime(s string) (h, m, sec int, err error) {
	bad := fmt.Errorf("bad time of day %q", s)
	s = strings.TrimSpace(s)
	pm, am := strings.HasSuffix(s, "pm"), strings.HasSuffix(s, "am")
	if pm || am {
		s = strings.TrimSpace(s[:len(s)-2])
	}
	parts := strings.Split(s, ":")
	if len(parts) < 2 || len(parts) > 3 {
		return 0, 0, 0, bad
	}
	vals := make([]int, 3)
	for i, p := range parts {
		if !isDigits(p) || len(p) > 2 {
			return 0, 0, 0, bad
		}
		vals[i], _ = strconv.Atoi(p)
	}
	h, m, sec = vals[0], vals[1], vals[2]
	if am || pm {
		if h < 1 || h > 12 {
			return 0, 0, 0, bad
		}
		h %= 12
		if pm {
			h += 12
		}
	}
	if h > 23 || m > 59 || sec > 59 {
		return 0, 0, 0, bad
	}
	return h, m, sec, nil
}

// monthDay reads MM/DD[/YY], MM.DD[.YY], MMDD or MMDDYY; without a year the
// date is this year's, or next year's when it has passed (looking back:
// last year's when it is yet to come).
func monthDay(s string, now time.Time, past bool) (time.Time, error) {
	var fields []string
	switch {
	case strings.Contains(s, "/"):
		fields = strings.Split(s, "/")
	case strings.Contains(s, "."):
		fields = strings.Split(s, ".")
	case len(s) == 4:
		fields = []string{s[:2], s[2:]}
	case len(s) == 6:
		fields = []string{s[:2], s[2:4], s[4:]}
	}
	if len(fields) < 2 || len(fields) > 3 {
		return time.Time{}, fmt.Errorf("bad date")
	}
	nums := make([]int, len(fields))
	for i, f := range fields {
		if !isDigits(f) || len(f) > 4 {
			return time.Time{}, fmt.Errorf("bad date")
		}
		nums[i], _ = strconv.Atoi(f)
	}
	month, day := nums[0], nums[1]
	if month < 1 || month > 12 || day < 1 || day > 31 {
		return time.Time{}, fmt.Errorf("bad date")
	}
	year := now.Year()
	explicit := len(nums) == 3
	if explicit {
		year = nums[2]
		if year < 100 {
			year += 2000
		}
	}
	t := time.Date(year, time.Month(month), day, 0, 0, 0, 0, now.Location())
	if t.Month() != time.Month(month) { // 02/31
		return time.Time{}, fmt.Errorf("bad date")
	}
	today := time.Date(now.Year(), now.Month(), now.Day(), 0, 0, 0, 0, now.Location())
	switch {
	case !explicit && !past && t.Before(today):
		t = t.AddDate(1, 0, 0)
	case !explicit && past && t.After(today):
		t = t.AddDate(-1, 0, 0)
	}
	return t, nil
}
