package hostlist

import (
	"fmt"
	"math/rand"
	"reflect"
	"slices"
	"strings"
	"testing"
)

func TestExpand(t *testing.T) {
	tests := []struct {
		in   string
		want []string
	}{
		{"", nil},
		{"node1", []string{"node1"}},
		{"node[1-3]", []string{"node1", "node2", "node3"}},
		{"node[1-3,7],gpu01", []string{"node1", "node2", "node3", "node7", "gpu01"}},
		{"node[01-03]", []string{"node01", "node02", "node03"}},
		{"node[08-11]", []string{"node08", "node09", "node10", "node11"}},
		{"node[8-11]", []string{"node8", "node9", "node10", "node11"}},
		{"node[001-2]", []string{"node001", "node002"}},
		{"node[5]", []string{"node5"}},
		{"node[3,1,2]", []string{"node3", "node1", "node2"}},
		{"rack[01-02]n[1-2]", []string{"rack01n1", "rack01n2", "rack02n1", "rack02n2"}},
		{"n[1-2]x", []string{"n1x", "n2x"}},
		{"[1-3]", []string{"1", "2", "3"}},
		{"a,,b", []string{"a", "b"}},
		{"a, b\tc\n", []string{"a", "b", "c"}},
		{",node1,", []string{"node1"}},
		{"127.0.1.[1-3]", []string{"127.0.1.1", "127.0.1.2", "127.0.1.3"}},
		{"node[1-2],node[1-2]", []string{"node1", "node2", "node1", "node2"}},
		{"x[0-0]", []string{"x0"}},
	}
	for _, tt := range tests {
		got, err := Expand(tt.in)
		if err != nil {
			t.Errorf("Expand(%q): unexpected error %v", tt.in, err)
			continue
		}
		if !reflect.DeepEqual(got, tt.want) {
			t.Errorf("Expand(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestExpandErrors(t *testing.T) {
	tests := []struct {
		in, want string
	}{
		{"node[1-3", "unbalanced brackets"},
		{"node1-3]", "unbalanced brackets"},
		{"node[[1-3]]", "nested"},
		{"node[]", "empty brackets"},
		{"node[3-1]", "reversed range 3-1"},
		{"node[a-b]", "is not a number"},
		{"node[1-]", "missing number"},
		{"node[-3]", "missing number"},
		{"node[1,,2]", "empty range"},
		{"node[1-2-3]", "is not a number"},
		{"node[1 -3]", "whitespace inside brackets"},
		{"node[0-65536]", "more than 65536 host names"},
		{"node[1-65536],x", "more than 65536 host names"},
		{"a[1-300]b[1-300]", "more than 65536 host names"},
		{"node[1-99999999999999999999]", "number too large"},
		{"n[0-18446744073709551615]", "number too large"},
	}
	for _, tt := range tests {
		got, err := Expand(tt.in)
		if err == nil {
			t.Errorf("Expand(%q) = %d names, want error containing %q", tt.in, len(got), tt.want)
			continue
		}
		if !strings.Contains(err.Error(), tt.want) || !strings.HasPrefix(err.Error(), "invalid hostlist ") {
			t.Errorf("Expand(%q) error = %q, want it to contain %q", tt.in, err, tt.want)
		}
	}
}

func TestExpandAtLimit(t *testing.T) {
	got, err := Expand("n[1-65536]")
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != MaxHosts || got[MaxHosts-1] != "n65536" {
		t.Fatalf("got %d names, last %q", len(got), got[len(got)-1])
	}
	if _, err := Expand("a[1-256]b[1-256]"); err != nil {
		t.Fatalf("256x256 = 65536 names must be allowed: %v", err)
	}
}

func TestCompress(t *testing.T) {
	tests := []struct {
		in   []string
		want string
	}{
		{nil, ""},
		{[]string{}, ""},
		{[]string{"node1"}, "node1"},
		{[]string{"node01"}, "node01"},
		{[]string{"node1", "node2", "node3", "node4", "node7"}, "node[1-4,7]"},
		{[]string{"node7", "node3", "node1", "node2", "node4"}, "node[1-4,7]"},
		{[]string{"node01", "node02"}, "node[01-02]"},
		{[]string{"node08", "node09", "node10", "node11"}, "node[08-11]"},
		{[]string{"node9", "node10"}, "node[9-10]"},
		{[]string{"node1", "node02"}, "node[1,02]"},
		{[]string{"node1", "node01", "node2", "node02"}, "node[1-2,01-02]"},
		{[]string{"gpu2", "node1", "gpu1", "node2"}, "gpu[1-2],node[1-2]"},
		{[]string{"node2", "node1", "node2"}, "node[1-2]"},
		{[]string{"login", "node1", "login"}, "login,node1"},
		{[]string{"rack01n1", "rack01n2", "rack02n1"}, "rack01n[1-2],rack02n1"},
		{[]string{"1", "2", "5"}, "[1-2,5]"},
		{[]string{"n1x", "n2x"}, "n1x,n2x"},
		{[]string{"a", "b"}, "a,b"},
		{[]string{"node0", "node1"}, "node[0-1]"},
		{[]string{"node001", "node002", "node1000"}, "node[001-002,1000]"},
		{[]string{"node099", "node100", "node101"}, "node[099-101]"},
		{[]string{"x12345678901234567890", "x1", "x2"}, "x12345678901234567890,x[1-2]"}, // too long to be a number
	}
	for _, tt := range tests {
		if got := Compress(tt.in); got != tt.want {
			t.Errorf("Compress(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

// sortedUnique is the set view of a list of names.
func sortedUnique(names []string) []string {
	s := slices.Clone(names)
	slices.Sort(s)
	return slices.Compact(s)
}

// TestRoundTrip checks the property Expand(Compress(names)) == names as sets,
// and that Compress is stable on its own output, over random name sets.
func TestRoundTrip(t *testing.T) {
	rng := rand.New(rand.NewSource(1))
	prefixes := []string{"node", "gpu", "rack1n", "r-", "", "login", "a.b."}
	for iter := 0; iter < 2000; iter++ {
		n := rng.Intn(40)
		names := make([]string, 0, n)
		for i := 0; i < n; i++ {
			p := prefixes[rng.Intn(len(prefixes))]
			switch rng.Intn(5) {
			case 0: // no number at all
				if p == "" {
					p = "x"
				}
				names = append(names, p)
			case 1: // zero padded
				names = append(names, fmt.Sprintf("%s%0*d", p, 1+rng.Intn(4), rng.Intn(120)))
			default:
				names = append(names, fmt.Sprintf("%s%d", p, rng.Intn(120)))
			}
		}
		c := Compress(names)
		back, err := Expand(c)
		if err != nil {
			t.Fatalf("Expand(Compress(%q)) = Expand(%q): %v", names, c, err)
		}
		if !slices.Equal(sortedUnique(back), sortedUnique(names)) {
			t.Fatalf("round trip of %q via %q gave %q", names, c, back)
		}
		if len(back) != len(sortedUnique(names)) {
			t.Fatalf("Compress(%q) = %q repeats names: %q", names, c, back)
		}
		if c2 := Compress(back); c2 != c {
			t.Fatalf("Compress not stable: %q -> %q -> %q", names, c, c2)
		}
	}
}

func TestExpandCompressHostlists(t *testing.T) {
	// Hostlists as Slurm prints them come back unchanged.
	for _, s := range []string{"node[1-4,7]", "node[01-10]", "gpu01", "node[3-4]", "a,b", "node[1-2],gpu[1-2]"} {
		names, err := Expand(s)
		if err != nil {
			t.Fatal(err)
		}
		if got := Compress(names); got != s {
			t.Errorf("Compress(Expand(%q)) = %q", s, got)
		}
	}
}

func FuzzExpand(f *testing.F) {
	for _, s := range []string{"node[1-3,7],gpu01", "rack[01-02]n[1-2]", "node[", "n[3-1]"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		names, err := Expand(s)
		if err != nil {
			if names != nil {
				t.Fatalf("Expand(%q) returned names with an error", s)
			}
			return
		}
		if len(names) > MaxHosts {
			t.Fatalf("Expand(%q) gave %d names", s, len(names))
		}
		for _, n := range names {
			if n == "" || strings.ContainsAny(n, "[], \t\r\n") {
				t.Fatalf("Expand(%q) gave bad name %q", s, n)
			}
		}
		c := Compress(names)
		back, err := Expand(c)
		if err != nil {
			t.Fatalf("Expand(Compress(Expand(%q))) = Expand(%q): %v", s, c, err)
		}
		if !slices.Equal(sortedUnique(back), sortedUnique(names)) {
			t.Fatalf("%q: round trip via %q lost names", s, c)
		}
	})
}

func BenchmarkExpand(b *testing.B) {
	for b.Loop() {
		if _, err := Expand("rack[01-16]n[001-256]"); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkCompress(b *testing.B) {
	names, _ := Expand("node[1-10000]")
	rand.New(rand.NewSource(2)).Shuffle(len(names), func(i, j int) { names[i], names[j] = names[j], names[i] })
	for b.Loop() {
		Compress(names)
	}
}
