package words

import (
	"slices"
	"strings"
	"testing"
)

// The options of the package's three callers.
var (
	// slurm.conf lines (cluster/config): double quotes only.
	conf = Options{Space: func(c byte) bool { return c == ' ' || c == '\t' || c == '\r' }}
	// #SBATCH directives (cluster/jobspec).
	directive = Options{
		Space:        func(c byte) bool { return c == ' ' || c == '\t' || c == '\r' || c == '\f' || c == '\v' },
		SingleQuotes: true,
		Comment:      '#',
	}
	// interactive scontrol lines (commands).
	command = Options{SingleQuotes: true}
)

func TestSplit(t *testing.T) {
	for _, tc := range []struct {
		name         string
		o            Options
		in           string
		want         []string
		unterminated bool
	}{
		// slurm.conf
		{"conf empty", conf, "", nil, false},
		{"conf blanks", conf, " \t\r ", nil, false},
		{"conf words", conf, "NodeName=n1  CPUs=4\tRealMemory=100\r", []string{"NodeName=n1", "CPUs=4", "RealMemory=100"}, false},
		{"conf quoted value", conf, `Feature="a b" x`, []string{"Feature=a b", "x"}, false},
		{"conf quotes inside a word", conf, `a"b c"d`, []string{"ab cd"}, false},
		{"conf empty quotes", conf, `x="" y`, []string{"x=", "y"}, false},
		{"conf lone empty quotes", conf, `"" a`, []string{"", "a"}, false},
		{"conf single quote is ordinary", conf, `a='b c'`, []string{"a='b", "c'"}, false},
		{"conf unterminated", conf, `a="b c`, []string{"a=b c"}, true},
		{"conf unterminated empty", conf, `a "`, []string{"a", ""}, true},
		{"conf hash is ordinary", conf, "a #b", []string{"a", "#b"}, false},
		{"conf form feed is ordinary", conf, "a\fb", []string{"a\fb"}, false},

		// #SBATCH directives
		{"directive options", directive, " -N 2 --job-name=x", []string{"-N", "2", "--job-name=x"}, false},
		{"directive all spaces", directive, "\t-a\f-b\v-c\r", []string{"-a", "-b", "-c"}, false},
		{"directive single quotes", directive, ` --comment='a "b" c'`, []string{`--comment=a "b" c`}, false},
		{"directive double quotes", directive, ` --comment="it's"`, []string{"--comment=it's"}, false},
		{"directive quotes inside a word", directive, ` a"b c"d'e f'g`, []string{"ab cde fg"}, false},
		{"directive empty quotes", directive, ` -J "" ''`, []string{"-J", "", ""}, false},
		{"directive comment", directive, " -N 2 # two nodes", []string{"-N", "2"}, false},
		{"directive comment only", directive, " # nothing", nil, false},
		{"directive hash inside a word", directive, " -J a#b", []string{"-J", "a#b"}, false},
		{"directive hash after quotes", directive, ` ""#b`, []string{"#b"}, false},
		{"directive quoted hash", directive, ` "#b" c`, []string{"#b", "c"}, false},
		{"directive unterminated", directive, ` -J "a b`, []string{"-J", "a b"}, true},
		{"directive unterminated single", directive, ` -J 'a # b`, []string{"-J", "a # b"}, true},

		// scontrol lines
		{"command words", command, "show job 12", []string{"show", "job", "12"}, false},
		{"command tabs", command, "\tshow\t\tjob ", []string{"show", "job"}, false},
		{"command quotes", command, `update Comment="a b" Name='c d'`, []string{"update", "Comment=a b", "Name=c d"}, false},
		{"command quotes inside a word", command, `a"b c"d`, []string{"ab cd"}, false},
		{"command other quote inside", command, `"it's" 'say "hi"'`, []string{"it's", `say "hi"`}, false},
		{"command empty quotes", command, `x '' ""`, []string{"x", "", ""}, false},
		{"command CR is ordinary", command, "a\rb c\r", []string{"a\rb", "c\r"}, false},
		{"command hash is ordinary", command, "a #b", []string{"a", "#b"}, false},
		{"command unterminated", command, `show 'job`, []string{"show", "job"}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, unterminated := Split(tc.in, tc.o)
			if !slices.Equal(got, tc.want) || (got == nil) != (tc.want == nil) || unterminated != tc.unterminated {
				t.Errorf("Split(%q) = %q, %v; want %q, %v", tc.in, got, unterminated, tc.want, tc.unterminated)
			}
		})
	}
}

func TestBlankDefault(t *testing.T) {
	got, _ := Split(" a\tb\rc\fd ", Options{})
	if want := []string{"a", "b\rc\fd"}; !slices.Equal(got, want) {
		t.Errorf("got %q, want %q", got, want)
	}
}

// FuzzSplit's seeds are in testdata/fuzz/FuzzSplit.
func FuzzSplit(f *testing.F) {
	f.Fuzz(func(t *testing.T, s string) {
		for _, o := range []Options{conf, directive, command, {}} {
			checkSplit(t, s, o)
		}
	})
}

// checkSplit checks what holds of every split.
func checkSplit(t *testing.T, s string, o Options) {
	out, unterminated := Split(s, o)
	space := o.Space
	if space == nil {
		space = Blank
	}
	// Words only lose characters: quotes, separators, comments.
	if n := len(strings.Join(out, "")); n > len(s) {
		t.Fatalf("%q: %d bytes of words from %d", s, n, len(s))
	}
	if len(out) > len(s) {
		t.Fatalf("%q: %d words from %d bytes", s, len(out), len(s))
	}
	if unterminated && !strings.ContainsAny(s, quotes(o)) {
		t.Fatalf("%q: unterminated without a quote", s)
	}
	// Without quotes and comments, words are the fields between
	// separators.
	if !strings.ContainsAny(s, quotes(o)) && (o.Comment == 0 || strings.IndexByte(s, o.Comment) < 0) {
		want := strings.FieldsFunc(s, func(r rune) bool { return r < 0x80 && space(byte(r)) })
		if !slices.Equal(out, want) {
			t.Fatalf("%q: %q, want the fields %q", s, out, want)
		}
	}
	// Quoting every word gives them back (where a quote is left that a
	// word does not hold).
	var b strings.Builder
	for _, w := range out {
		q, ok := quoteFor(w, o)
		if !ok {
			return
		}
		b.WriteString(q + w + q + " ")
	}
	again, unterminated := Split(b.String(), o)
	if !slices.Equal(again, out) || unterminated {
		t.Fatalf("%q: words %q, quoted %q, split again %q (unterminated %v)", s, out, b.String(), again, unterminated)
	}
}

// quotes are the quote characters o knows.
func quotes(o Options) string {
	if o.SingleQuotes {
		return `"'`
	}
	return `"`
}

// quoteFor picks a quote that w does not hold.
func quoteFor(w string, o Options) (string, bool) {
	for _, q := range quotes(o) {
		if !strings.ContainsRune(w, q) {
			return string(q), true
		}
	}
	return "", false
}
