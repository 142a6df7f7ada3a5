package format

import "strconv"

func itoa(i int) string     { return strconv.Itoa(i) }
func quote(s string) string { return strconv.Quote(s) }
