package config

import (
	"errors"
	"testing"
)

func TestParseTime(t *testing.T) {
	tests := []struct {
		in   string
		want int64
	}{
		{"0", 0},
		{"10", 10},
		{"10:00", 10},
		{"10:30", 11}, // seconds round up
		{"0:01", 1},
		{"0:00", 0},
		{"1:00:00", 60},
		{"1:00:01", 61},
		{"2:30:00", 150},
		{"1-0", 1440},
		{"1-00:00:00", 1440},
		{"1-2", 1560},
		{"1-2:30", 1590},
		{"1-2:30:01", 1591},
		{"0-0:0:1", 1},
		{"UNLIMITED", Unlimited},
		{"unlimited", Unlimited},
		{"INFINITE", Unlimited},
		{"-1", Unlimited},
		{"-5", -5},
		{" 15 ", 15},
		{"90", 90},
		{"0:90", 2}, // Slurm does not range-check fields
	}
	for _, tt := range tests {
		got, err := ParseTime(tt.in)
		if err != nil || got != tt.want {
			t.Errorf("ParseTime(%q) = %d, %v; want %d", tt.in, got, err, tt.want)
		}
	}
	for _, bad := range []string{"", "abc", "1:2:3:4", "1-", "-", "1--2", "1-2-3", "1:", ":1", "1.5", "1h", "--5", "-1:00", "99999999999", "1-2:3:4:5", "+5", "1 2"} {
		if got, err := ParseTime(bad); err == nil || !errors.Is(err, ErrInvalidTime) {
			t.Errorf("ParseTime(%q) = %d, %v; want ErrInvalidTime", bad, got, err)
		}
	}
}

func TestParseMem(t *testing.T) {
	tests := []struct {
		in   string
		want int64
	}{
		{"0", 0},
		{"100", 100},
		{"100M", 100},
		{"100m", 100},
		{"2G", 2048},
		{"2g", 2048},
		{"1T", 1024 * 1024},
		{"1024K", 1},
		{"1025K", 2},
		{"1k", 1},
		{"4000", 4000},
	}
	for _, tt := range tests {
		got, err := ParseMem(tt.in)
		if err != nil || got != tt.want {
			t.Errorf("ParseMem(%q) = %d, %v; want %d", tt.in, got, err, tt.want)
		}
	}
	for _, bad := range []string{"", "abc", "G", "1.5G", "-1", "10GB", "10X", "1 G", "99999999999999999", "9999999999999T"} {
		if got, err := ParseMem(bad); err == nil || !errors.Is(err, ErrInvalidMem) {
			t.Errorf("ParseMem(%q) = %d, %v; want ErrInvalidMem", bad, got, err)
		}
	}
}

func TestFormatTime(t *testing.T) {
	tests := []struct {
		min        int64
		short, lng string
	}{
		{0, "0:00", "00:00:00"},
		{1, "1:00", "00:01:00"},
		{10, "10:00", "00:10:00"},
		{59, "59:00", "00:59:00"},
		{60, "1:00:00", "01:00:00"},
		{150, "2:30:00", "02:30:00"},
		{1440, "1-00:00:00", "1-00:00:00"},
		{1441, "1-00:01:00", "1-00:01:00"},
		{14 * 1440, "14-00:00:00", "14-00:00:00"},
		{Unlimited, "UNLIMITED", "UNLIMITED"},
		{-5, "INVALID", "INVALID"},
	}
	for _, tt := range tests {
		if got := FormatTime(tt.min); got != tt.short {
			t.Errorf("FormatTime(%d) = %q, want %q", tt.min, got, tt.short)
		}
		if got := FormatTimeLong(tt.min); got != tt.lng {
			t.Errorf("FormatTimeLong(%d) = %q, want %q", tt.min, got, tt.lng)
		}
	}
	if got := FormatSeconds(4); got != "0:04" {
		t.Errorf("FormatSeconds(4) = %q", got)
	}
	if got := FormatSecondsLong(4); got != "00:00:04" {
		t.Errorf("FormatSecondsLong(4) = %q", got)
	}
	// Whatever FormatTime prints, ParseTime reads back.
	for _, m := range []int64{0, 1, 10, 61, 1439, 1440, 1500, 100000, Unlimited} {
		for _, s := range []string{FormatTime(m), FormatTimeLong(m)} {
			if got, err := ParseTime(s); err != nil || got != m {
				t.Errorf("ParseTime(%q) = %d, %v; want %d", s, got, err, m)
			}
		}
	}
}
