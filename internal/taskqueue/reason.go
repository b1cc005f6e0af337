package taskqueue

import (
	"fmt"
	"unicode/utf8"

	"github.com/trainmaster/master/go/wire"
)

// CutReason bounds a failure reason, which comes from a client, to
// wire.MaxErrorBytes: a longer one keeps its first bytes, cut at a UTF-8
// boundary, and says how long it was. The reason is stored with the task and
// written to etcd with each later change of it, so its size must not be the
// client's to choose.
func CutReason(s string) string {
	if len(s) <= wire.MaxErrorBytes {
		return s
	}
	cut := wire.MaxErrorBytes
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return fmt.Sprintf("%s... (%d bytes, cut to %d)", s[:cut], len(s), wire.MaxErrorBytes)
}
