package hostlist

import (
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
)

// MaxHosts is the largest number of names one Expand call produces. A larger
// hostlist is almost always a typo (node[1-1000000]) and is rejected.
const MaxHosts = 65536

// maxDigits bounds the numbers inside brackets and the numeric suffixes that
// Compress folds into ranges, so arithmetic never overflows.
const maxDigits = 18

// Expand returns the host names a hostlist stands for, in order.
//
// Items are separated by commas (outside brackets) or whitespace; empty items
// are skipped. Inside brackets, a comma-separated list of numbers and ranges
// (lo-hi) is expanded; a range keeps the zero padding of its low bound, so
// node[01-10] gives node01 ... node10 and node[8-10] gives node8 ... node10.
// Several bracket groups in one item form a cartesian product, the leftmost
// varying slowest: rack[1-2]n[1-2] gives rack1n1 rack1n2 rack2n1 rack2n2.
//
// Expand("") returns no names and no error. Malformed input (unbalanced or
// nested brackets, an empty or non-numeric range, a reversed range) and
// hostlists of more than MaxHosts names are errors.
func Expand(s string) ([]string, error) {
	items, err := splitTop(s)
	if err != nil {
		return nil, hlErr(s, err.Error())
	}
	var out []string
	total := 0
	for _, it := range items {
		segs, count, err := parseItem(it)
		if err != nil {
			return nil, hlErr(s, err.Error())
		}
		total += count
		if total > MaxHosts {
			return nil, hlErr(s, fmt.Sprintf("more than %d host names", MaxHosts))
		}
		out = appendProduct(out, segs)
	}
	return out, nil
}

func hlErr(s, why string) error {
	const maxShown = 80
	shown := s
	if len(shown) > maxShown {
		shown = shown[:maxShown] + "..."
	}
	return fmt.Errorf("invalid hostlist %q: %s", shown, why)
}

// splitTop splits at commas and whitespace outside brackets and checks that
// brackets balance and do not nest.
func splitTop(s string) ([]string, error) {
	var items []string
	depth := 0
	start := 0
	for i := 0; i < len(s); i++ {
		switch c := s[i]; c {
		case '[':
			if depth > 0 {
				return nil, fmt.Errorf("nested '[' at offset %d", i)
			}
			depth++
		case ']':
			if depth == 0 {
				return nil, fmt.Errorf("unbalanced brackets: ']' without '[' at offset %d", i)
			}
			depth--
		case ',', ' ', '\t', '\n', '\r':
			if depth > 0 {
				if c != ',' {
					return nil, fmt.Errorf("whitespace inside brackets at offset %d", i)
				}
				continue
			}
			if i > start {
				items = append(items, s[start:i])
			}
			start = i + 1
		}
	}
	if depth != 0 {
		return nil, fmt.Errorf("unbalanced brackets: '[' without ']'")
	}
	if start < len(s) {
		items = append(items, s[start:])
	}
	return items, nil
}

// segment is either literal text or the expanded values of one bracket group.
type segment struct {
	lit  string
	vals []string // nil for a literal segment
}

// parseItem splits one item (no top-level separators, balanced brackets) into
// segments and returns how many names it expands to.
func parseItem(it string) ([]segment, int, error) {
	var segs []segment
	count := 1
	for len(it) > 0 {
		open := strings.IndexByte(it, '[')
		if open < 0 {
			segs = append(segs, segment{lit: it})
			break
		}
		if open > 0 {
			segs = append(segs, segment{lit: it[:open]})
		}
		end := strings.IndexByte(it[open:], ']') + open // balanced: always found
		vals, err := expandBracket(it[open+1:end], MaxHosts/count)
		if err != nil {
			return nil, 0, err
		}
		count *= len(vals)
		segs = append(segs, segment{vals: vals})
		it = it[end+1:]
	}
	return segs, count, nil
}

// expandBracket expands "1-3,07,10-12" (without the brackets), refusing to
// produce more than limit values.
func expandBracket(body string, limit int) ([]string, error) {
	if body == "" {
		return nil, fmt.Errorf("empty brackets []")
	}
	var vals []string
	for _, part := range strings.Split(body, ",") {
		if part == "" {
			return nil, fmt.Errorf("empty range in [%s]", body)
		}
		loStr, hiStr, isRange := strings.Cut(part, "-")
		lo, err := parseNum(loStr, part)
		if err != nil {
			return nil, err
		}
		hi := lo
		if isRange {
			if hi, err = parseNum(hiStr, part); err != nil {
				return nil, err
			}
			if hi < lo {
				return nil, fmt.Errorf("reversed range %s (the low bound must come first)", part)
			}
		}
		if hi-lo >= uint64(limit-len(vals)) {
			return nil, fmt.Errorf("more than %d host names", MaxHosts)
		}
		width := len(loStr)
		for v := lo; ; v++ {
			vals = append(vals, pad(v, width))
			if v == hi {
				break
			}
		}
	}
	return vals, nil
}

func parseNum(s, part string) (uint64, error) {
	if s == "" {
		return 0, fmt.Errorf("bad range %q: missing number", part)
	}
	if len(s) > maxDigits {
		return 0, fmt.Errorf("bad range %q: number too large", part)
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return 0, fmt.Errorf("bad range %q: %q is not a number", part, s)
		}
	}
	v, err := strconv.ParseUint(s, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("bad range %q: %v", part, err)
	}
	return v, nil
}

// pad formats v in decimal with at least width digits.
func pad(v uint64, width int) string {
	s := strconv.FormatUint(v, 10)
	if len(s) < width {
		s = strings.Repeat("0", width-len(s)) + s
	}
	return s
}

func appendProduct(out []string, segs []segment) []string {
	var rec func(i int, prefix string)
	rec = func(i int, prefix string) {
		if i == len(segs) {
			out = append(out, prefix)
			return
		}
		if segs[i].vals == nil {
			rec(i+1, prefix+segs[i].lit)
			return
		}
		for _, v := range segs[i].vals {
			rec(i+1, prefix+v)
		}
	}
	rec(0, "")
	return out
}

// host is a name split into a prefix and its trailing decimal number.
type host struct {
	num    uint64
	digits string // the number as written, e.g. "07"
}

// run is a range lo..hi whose members are all written with width digits
// (at least; numbers wider than width are written in full).
type run struct {
	lo, hi uint64
	width  int
}

// Compress returns the hostlist Slurm prints for names: names that share a
// prefix and end in a number are folded into one bracket group, numbers sorted
// and consecutive ones joined into ranges ("node[1-4,7]"). Prefixes appear in
// the order of their first name; zero padding is kept (node01,node02 gives
// node[01-02]), a prefix with one name prints bare ("node1"), and duplicate
// names are printed once. Compress(nil) is "".
//
// Expand(Compress(names)) yields the same set of names, provided no name
// contains '[', ']', ',' or whitespace (host names never do).
func Compress(names []string) string {
	type group struct {
		prefix string
		bare   bool // a name with no numeric suffix: printed as is
		hosts  []host
	}
	var groups []*group
	byPrefix := map[string]*group{}
	seenBare := map[string]bool{}
	for _, name := range names {
		prefix, digits := splitNumericSuffix(name)
		if digits == "" {
			if !seenBare[name] {
				seenBare[name] = true
				groups = append(groups, &group{prefix: name, bare: true})
			}
			continue
		}
		g := byPrefix[prefix]
		if g == nil {
			g = &group{prefix: prefix}
			byPrefix[prefix] = g
			groups = append(groups, g)
		}
		n, _ := strconv.ParseUint(digits, 10, 64) // at most maxDigits digits
		g.hosts = append(g.hosts, host{num: n, digits: digits})
	}

	var b strings.Builder
	for _, g := range groups {
		if b.Len() > 0 {
			b.WriteByte(',')
		}
		if g.bare {
			b.WriteString(g.prefix)
			continue
		}
		runs := foldRuns(g.hosts)
		b.WriteString(g.prefix)
		if len(runs) == 1 && runs[0].lo == runs[0].hi {
			b.WriteString(pad(runs[0].lo, runs[0].width))
			continue
		}
		b.WriteByte('[')
		for i, r := range runs {
			if i > 0 {
				b.WriteByte(',')
			}
			b.WriteString(pad(r.lo, r.width))
			if r.hi != r.lo {
				b.WriteByte('-')
				b.WriteString(pad(r.hi, r.width))
			}
		}
		b.WriteByte(']')
	}
	return b.String()
}

// splitNumericSuffix splits "rack01n12" into "rack01n" and "12". Names whose
// numeric suffix is too long to be a number are treated as having none.
func splitNumericSuffix(name string) (prefix, digits string) {
	i := len(name)
	for i > 0 && name[i-1] >= '0' && name[i-1] <= '9' {
		i--
	}
	if len(name)-i > maxDigits {
		return name, ""
	}
	return name[:i], name[i:]
}

// foldRuns sorts hosts numerically (removing duplicates) and joins them into
// ranges. A range printed as "lo-hi" expands with the width of lo, so a host
// joins a range only when padding its number to that width reproduces it.
func foldRuns(hosts []host) []run {
	sort.Slice(hosts, func(i, j int) bool {
		if hosts[i].num != hosts[j].num {
			return hosts[i].num < hosts[j].num
		}
		return len(hosts[i].digits) < len(hosts[j].digits)
	})
	type key struct {
		next  uint64
		width int
	}
	var runs []run
	open := map[key]int{} // the run that the number next, written with width digits, would extend
	var prev string
	for i, h := range hosts {
		if i > 0 && h.digits == prev {
			continue
		}
		prev = h.digits
		// A number without leading zeros fits any width up to its length;
		// one with leading zeros fits only its own width.
		minWidth := 1
		if h.digits[0] == '0' {
			minWidth = len(h.digits)
		}
		joined := false
		for w := len(h.digits); w >= minWidth; w-- {
			k, ok := open[key{h.num, w}]
			if !ok {
				continue
			}
			delete(open, key{h.num, w})
			runs[k].hi = h.num
			if h.num < math.MaxUint64 {
				open[key{h.num + 1, w}] = k
			}
			joined = true
			break
		}
		if !joined {
			runs = append(runs, run{lo: h.num, hi: h.num, width: len(h.digits)})
			if h.num < math.MaxUint64 {
				open[key{h.num + 1, len(h.digits)}] = len(runs) - 1
			}
		}
	}
	sort.SliceStable(runs, func(i, j int) bool { return runs[i].lo < runs[j].lo })
	return runs
}
