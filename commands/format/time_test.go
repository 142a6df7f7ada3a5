package format

import (
	"testing"
	"time"
)

func TestElapsed(t *testing.T) {
	for _, c := range []struct {
		d    time.Duration
		want string
	}{
		{0, "0:00"},
		{4 * time.Second, "0:04"},
		{4*time.Second + 900*time.Millisecond, "0:04"},
		{12*time.Minute + 34*time.Second, "12:34"},
		{time.Hour + 2*time.Minute + 3*time.Second, "1:02:03"},
		{26*time.Hour + 3*time.Minute + 4*time.Second, "1-02:03:04"},
		{-time.Second, "INVALID"},
		{400 * 24 * time.Hour, "INVALID"},
	} {
		if got := Elapsed(c.d); got != c.want {
			t.Errorf("Elapsed(%v) = %q, want %q", c.d, got, c.want)
		}
	}
}

func TestElapsedHMS(t *testing.T) {
	for _, c := range []struct {
		d    time.Duration
		want string
	}{
		{0, "00:00:00"},
		{6 * time.Second, "00:00:06"},
		{time.Hour + 2*time.Minute + 3*time.Second, "01:02:03"},
		{26*time.Hour + 3*time.Minute + 4*time.Second, "1-02:03:04"},
		{400 * 24 * time.Hour, "400-00:00:00"},
		{-time.Second, "INVALID"},
	} {
		if got := ElapsedHMS(c.d); got != c.want {
			t.Errorf("ElapsedHMS(%v) = %q, want %q", c.d, got, c.want)
		}
	}
}

func TestTimeLimit(t *testing.T) {
	for _, c := range []struct {
		min  int64
		want string
	}{
		{10, "10:00"},
		{0, "0:00"},
		{90, "1:30:00"},
		{1440, "1-00:00:00"},
		{-1, "UNLIMITED"},
	} {
		if got := TimeLimit(c.min); got != c.want {
			t.Errorf("TimeLimit(%d) = %q, want %q", c.min, got, c.want)
		}
	}
	if got := mins2time(10); got != "00:10:00" {
		t.Errorf("mins2time(10) = %q", got)
	}
	if got := mins2time(-1); got != "UNLIMITED" {
		t.Errorf("mins2time(-1) = %q", got)
	}
}

func TestISOTimeAndCTime(t *testing.T) {
	if got := ISOTime(time.Time{}); got != "Unknown" {
		t.Errorf("ISOTime(zero) = %q", got)
	}
	if got := ISOTime(at(4, 59, 28)); got != "2026-11-30T04:59:28" {
		t.Errorf("ISOTime = %q", got)
	}
	// A time in another zone prints as local wall-clock time.
	utc := at(4, 59, 28).UTC()
	if got := ISOTime(utc); got != "2026-11-30T04:59:28" {
		t.Errorf("ISOTime(UTC value) = %q, want local 2026-11-30T04:59:28", got)
	}
	if got := CTime(at(4, 59, 33)); got != "Mon Nov 30 04:59:33 2026" {
		t.Errorf("CTime = %q", got)
	}
	if got := CTime(time.Date(2026, 11, 3, 1, 2, 3, 0, time.Local)); got != "Tue Nov  3 01:02:03 2026" {
		t.Errorf("CTime pads the day like ctime(3): %q", got)
	}
}
