//go:build !unix

package main

import "os"

// terminalSize reports no terminal where TIOCGWINSZ does not exist: the
// watch prints plain lines there.
func terminalSize(*os.File) (cols, rows int, ok bool) { return 0, 0, false }
