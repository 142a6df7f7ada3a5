package words

import "strings"

// Options say what separates, quotes and ends the words of a line.
type Options struct {
	// Space reports whether c separates words outside quotes; nil means
	// ' ' and '\t'.
	Space func(c byte) bool
	// SingleQuotes makes ' quote as " does; otherwise it is an ordinary
	// character. Inside one kind of quote the other kind is ordinary.
	SingleQuotes bool
	// Comment, unless 0, starts a comment that runs to the end of s where
	// it begins a word outside quotes: "a #b" is the word "a" and a
	// comment, "a#b" and `""#b` are one word each.
	Comment byte
}

// Blank is the default Space: ' ' and '\t'.
func Blank(c byte) bool { return c == ' ' || c == '\t' }

// Split splits s into words. Quotes group what is between them into a
// word (white space included) and are dropped: `a"b c"d` is one word
// "ab cd", and `""` is an empty word. A quote left open runs to the end
// of s, its text still a word; unterminated then reports it, for callers
// that reject such lines.
func Split(s string, o Options) (out []string, unterminated bool) {
	space := o.Space
	if space == nil {
		space = Blank
	}
	var cur strings.Builder
	inWord := false
	var quote byte // the open quote, 0 outside quotes
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case quote != 0:
			if c == quote {
				quote = 0
			} else {
				cur.WriteByte(c)
			}
		case c == '"' || (c == '\'' && o.SingleQuotes):
			quote, inWord = c, true
		case space(c):
			if inWord {
				out = append(out, cur.String())
				cur.Reset()
				inWord = false
			}
		case c == o.Comment && c != 0 && !inWord:
			return out, false
		default:
			cur.WriteByte(c)
			inWord = true
		}
	}
	if inWord {
		out = append(out, cur.String())
	}
	return out, quote != 0
}
