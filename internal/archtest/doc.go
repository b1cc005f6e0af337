// Package archtest holds the tests that keep the house's shape: which
// package may import which, what never reaches the lower layers, and how
// large a file or a function may grow. doc/architecture.md draws the same
// layers.
package archtest
