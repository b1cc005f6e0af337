package statusweb

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// num writes a count or a rate for people: 1,234,567; a rate under 10
// keeps one decimal.
func num(v any) string {
	switch n := v.(type) {
	case int:
		return group(int64(n))
	case int64:
		return group(n)
	case float64:
		if math.IsNaN(n) || math.IsInf(n, 0) {
			return "–"
		}
		if n != 0 && math.Abs(n) < 10 && math.Round(n) != n {
			return strconv.FormatFloat(n, 'f', 1, 64)
		}
		return group(int64(math.Round(n)))
	}
	return fmt.Sprint(v)
}

func group(n int64) string {
	s := strconv.FormatInt(n, 10)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var b strings.Builder
	if neg {
		b.WriteByte('-')
	}
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	return b.String()
}

// dur writes seconds for people: "45 s", "3 min 20 s", "2 h 5 min", "3 d 4 h".
func dur(secs float64) string {
	if math.IsNaN(secs) || secs < 0 {
		return "unknown"
	}
	if secs < 1 {
		return "under 1 s"
	}
	if math.IsInf(secs, 1) || secs > 100*365*86400 {
		return "years"
	}
	s := int64(math.Round(secs))
	two := func(a int64, ua string, b int64, ub string) string {
		if b == 0 {
			return fmt.Sprintf("%d %s", a, ua)
		}
		return fmt.Sprintf("%d %s %d %s", a, ua, b, ub)
	}
	switch {
	case s < 60:
		return fmt.Sprintf("%d s", s)
	case s < 600:
		return two(s/60, "min", s%60, "s")
	case s < 3600:
		return fmt.Sprintf("%d min", (s+30)/60)
	case s < 86400:
		return two(s/3600, "h", s%3600/60, "min")
	}
	return two(s/86400, "d", s%86400/3600, "h")
}

// eta writes a time left, "unknown" when there is none.
func eta(secs *float64) string {
	if secs == nil {
		return "unknown"
	}
	return dur(*secs)
}

func plural(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return num(n) + " " + many
}
