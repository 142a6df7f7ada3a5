package jobspec

import (
	"errors"
	"reflect"
	"strings"
	"testing"
)

// squeueLike is a table shaped like squeue's: aliases, an optional
// argument, and long-only options.
var squeueLike = &Getopt{Permute: true, Opts: []Opt{
	{Long: "jobs", Short: 'j', Arg: OptionalArg},
	{Long: "user", Short: 'u', Arg: RequiredArg},
	{Long: "users", Short: 'u', Arg: RequiredArg},
	{Long: "usage", Arg: NoArg},
	{Long: "noheader", Short: 'h', Arg: NoArg},
	{Long: "long", Short: 'l', Arg: NoArg},
	{Long: "format", Short: 'o', Arg: RequiredArg},
	{Long: "Format", Short: 'O', Arg: RequiredArg},
	{Long: "sib", Arg: NoArg, Key: "sibling"},
	{Long: "sibling", Arg: NoArg, Key: "sibling"},
	{Short: 'v', Arg: NoArg},
}}

func run(g *Getopt, args ...string) (string, []string, error) {
	var seen []string
	rest, err := g.Parse(args, func(o *Opt, val string, has bool) error {
		s := o.ID()
		if has {
			s += "=" + val
		}
		seen = append(seen, s)
		return nil
	})
	return strings.Join(seen, " "), rest, err
}

func TestGetoptForms(t *testing.T) {
	tests := []struct {
		args []string
		opts string
		rest []string
	}{
		{[]string{"-uroot"}, "u=root", nil},
		{[]string{"-u", "root"}, "u=root", nil},
		{[]string{"--user=root"}, "u=root", nil},
		{[]string{"--users", "a,b"}, "u=a,b", nil},
		{[]string{"--use=x"}, "u=x", nil}, // user and users are one option
		{[]string{"-j5,6"}, "j=5,6", nil},
		{[]string{"-j", "5"}, "j", []string{"5"}}, // optional arguments must be attached
		{[]string{"--jobs=5"}, "j=5", nil},
		{[]string{"--jobs", "5"}, "j", []string{"5"}},
		{[]string{"5", "-v"}, "v", []string{"5"}}, // operands are permuted
		{[]string{"-hl"}, "h l", nil},
		{[]string{"-lho", "%i %j"}, "l h o=%i %j", nil},
		{[]string{"-o%.18i"}, "o=%.18i", nil},
		{[]string{"-O", "jobid"}, "O=jobid", nil},
		{[]string{"--form=x"}, "o=x", nil}, // unique prefix (case matters: not Format)
		{[]string{"--Form=x"}, "O=x", nil}, // unique prefix of Format
		{[]string{"--si"}, "sibling", nil}, // "sib" and "sibling" are one option
		{[]string{"--user=a", "--", "-v"}, "u=a", []string{"-v"}},
		{[]string{"-", "-v"}, "v", []string{"-"}},
		{[]string{"--usage"}, "usage", nil},
	}
	for _, tt := range tests {
		opts, rest, err := run(squeueLike, tt.args...)
		if err != nil {
			t.Errorf("Parse(%q): %v", tt.args, err)
			continue
		}
		if opts != tt.opts || !reflect.DeepEqual(rest, tt.rest) {
			t.Errorf("Parse(%q) = %q %q, want %q %q", tt.args, opts, rest, tt.opts, tt.rest)
		}
	}
}

func TestGetoptStopsAtOperandWithoutPermute(t *testing.T) {
	g := &Getopt{Opts: squeueLike.Opts}
	opts, rest, err := run(g, "-v", "script.sh", "-h", "x")
	if err != nil || opts != "v" || !reflect.DeepEqual(rest, []string{"script.sh", "-h", "x"}) {
		t.Errorf("got %q %q %v", opts, rest, err)
	}
}

func TestGetoptErrors(t *testing.T) {
	tests := []struct {
		args []string
		msg  string
	}{
		{[]string{"--bogus"}, "unrecognized option '--bogus'"},
		{[]string{"--bogus=1"}, "unrecognized option '--bogus=1'"},
		{[]string{"-y"}, "invalid option -- 'y'"},
		{[]string{"-u"}, "option requires an argument -- 'u'"},
		{[]string{"--user"}, "option '--user' requires an argument"},
		{[]string{"--long=1"}, "option '--long' doesn't allow an argument"},
		{[]string{"--us=x"}, "option '--us' is ambiguous; possibilities: '--user' '--users' '--usage'"},
		{[]string{"--"}, ""},
	}
	for _, tt := range tests {
		_, _, err := run(squeueLike, tt.args...)
		if tt.msg == "" {
			if err != nil {
				t.Errorf("Parse(%q): %v", tt.args, err)
			}
			continue
		}
		var ge *GetoptError
		if !errors.As(err, &ge) || ge.Msg != tt.msg {
			t.Errorf("Parse(%q) error %v, want %q", tt.args, err, tt.msg)
		}
	}
	// Errors from the callback come back as they are.
	boom := errors.New("boom")
	_, err := squeueLike.Parse([]string{"-v"}, func(*Opt, string, bool) error { return boom })
	if err != boom {
		t.Errorf("callback error: %v", err)
	}
	if TryHelp("squeue") != `Try "squeue --help" for more information` {
		t.Errorf("TryHelp = %q", TryHelp("squeue"))
	}
}
