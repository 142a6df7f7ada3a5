package jobspec

import (
	"fmt"
	"strings"
)

// ArgKind says whether an option takes an argument, as in getopt_long's
// has_arg.
type ArgKind int

const (
	// NoArg options take no argument: --parsable, -W.
	NoArg ArgKind = iota
	// RequiredArg options take one: --time=10, --time 10, -t10, -t 10.
	RequiredArg
	// OptionalArg options take one only when it is attached: --jobs=5,
	// -j5. "--jobs 5" and "-j 5" leave 5 as an operand.
	OptionalArg
)

// Opt is one row of a getopt_long option table: a long name, a short
// letter, or both.
type Opt struct {
	Long  string // "" for a short-only option
	Short byte   // 0 for a long-only option
	Arg   ArgKind
	// Key names the option to the caller; several rows with the same Key
	// are aliases (--user and --users). It defaults to the short letter
	// when there is one, else to Long.
	Key string
}

// ID is the option's Key, or its default.
func (o *Opt) ID() string {
	switch {
	case o.Key != "":
		return o.Key
	case o.Short != 0:
		return string(o.Short)
	}
	return o.Long
}

// GetoptError is an error getopt_long itself reports, such as
// "unrecognized option '--bogus'". Slurm's commands print it as
// "<prog>: <Msg>" followed by a line pointing at --help.
type GetoptError struct{ Msg string }

func (e *GetoptError) Error() string { return e.Msg }

// Getopt parses command lines the way glibc's getopt_long does, over a
// table of options. It is the one parser behind sbatch, squeue, sinfo,
// scancel, sacct and scontrol.
type Getopt struct {
	Opts []Opt
	// Permute is getopt_long's default behaviour: words that are not
	// options (operands) are collected and parsing goes on after them, so
	// "scancel 5 -v" sees -v. Without it parsing stops at the first
	// operand ("+" at the start of the option string), as sbatch does so
	// that a script's own arguments are left alone.
	Permute bool
}

// Parse calls fn for each option in order, with its argument (val, "" when
// none was given; has reports whether one was) and returns the operands.
// "--" ends the options; a lone "-" is an operand. Long options may be
// abbreviated to any unambiguous prefix, and an exact name always wins.
// Errors from getopt itself are *GetoptError; errors from fn are returned
// as they are.
func (g *Getopt) Parse(words []string, fn func(o *Opt, val string, has bool) error) ([]string, error) {
	var operands []string
	for i := 0; i < len(words); i++ {
		w := words[i]
		if w == "--" {
			return append(operands, words[i+1:]...), nil
		}
		if len(w) < 2 || w[0] != '-' {
			if !g.Permute {
				return append(operands, words[i:]...), nil
			}
			operands = append(operands, w)
			continue
		}
		if w[1] == '-' {
			name, val, hasVal := strings.Cut(w[2:], "=")
			opt, err := g.lookupLong(name, w)
			if err != nil {
				return nil, err
			}
			switch opt.Arg {
			case NoArg:
				if hasVal {
					return nil, &GetoptError{fmt.Sprintf("option '--%s' doesn't allow an argument", opt.Long)}
				}
			case RequiredArg:
				if !hasVal {
					if i+1 >= len(words) {
						return nil, &GetoptError{fmt.Sprintf("option '--%s' requires an argument", opt.Long)}
					}
					i++
					val, hasVal = words[i], true
				}
			}
			if err := fn(opt, val, hasVal); err != nil {
				return nil, err
			}
			continue
		}
		// A cluster of short options: -WQ, -J name, -Jname, -N2.
		for j := 1; j < len(w); j++ {
			c := w[j]
			opt := g.lookupShort(c)
			if opt == nil {
				return nil, &GetoptError{fmt.Sprintf("invalid option -- '%s'", string(rune(c)))}
			}
			val, has := "", false
			if opt.Arg != NoArg {
				switch {
				case j+1 < len(w):
					val, has = w[j+1:], true
				case opt.Arg == RequiredArg:
					if i+1 >= len(words) {
						return nil, &GetoptError{fmt.Sprintf("option requires an argument -- '%c'", c)}
					}
					i++
					val, has = words[i], true
				}
				j = len(w) // the rest of the word was the argument
			}
			if err := fn(opt, val, has); err != nil {
				return nil, err
			}
		}
	}
	return operands, nil
}

func (g *Getopt) lookupShort(c byte) *Opt {
	for i := range g.Opts {
		if g.Opts[i].Short == c {
			return &g.Opts[i]
		}
	}
	return nil
}

// lookupLong finds the option named by name (the text after "--" and before
// any '='): an exact match, or a prefix that names one option (several rows
// that are aliases of one option count once). word is the whole argument,
// for messages.
func (g *Getopt) lookupLong(name, word string) (*Opt, error) {
	var matches []*Opt
	distinct := map[string]bool{}
	for i := range g.Opts {
		opt := &g.Opts[i]
		if opt.Long == "" {
			continue
		}
		if opt.Long == name {
			return opt, nil
		}
		if name != "" && strings.HasPrefix(opt.Long, name) {
			matches = append(matches, opt)
			distinct[opt.ID()+"\x00"+fmt.Sprint(opt.Arg)] = true
		}
	}
	switch {
	case len(matches) == 0:
		return nil, &GetoptError{fmt.Sprintf("unrecognized option '%s'", word)}
	case len(distinct) == 1:
		return matches[0], nil
	}
	var b strings.Builder
	fmt.Fprintf(&b, "option '--%s' is ambiguous; possibilities:", name)
	for _, m := range matches {
		fmt.Fprintf(&b, " '--%s'", m.Long)
	}
	return nil, &GetoptError{b.String()}
}

// TryHelp is the line Slurm's commands print after a getopt error.
func TryHelp(prog string) string {
	return fmt.Sprintf("Try \"%s --help\" for more information", prog)
}
