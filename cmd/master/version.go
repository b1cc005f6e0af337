package main

import "runtime/debug"

// version is the release, set at build time by `make image` (and any
// release build) with -ldflags "-X main.version=...".
var version string

// versionString is what `master -version` prints and logs at start: the
// version set at build time, else the commit the binary was built from (Go
// records it when building inside a git checkout), else "devel".
func versionString() string {
	if version != "" {
		return version
	}
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return "devel"
	}
	rev, dirty := "", false
	for _, s := range info.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			dirty = s.Value == "true"
		}
	}
	switch {
	case rev == "":
		return "devel"
	case dirty:
		return rev[:min(12, len(rev))] + "-dirty"
	}
	return rev[:min(12, len(rev))]
}
