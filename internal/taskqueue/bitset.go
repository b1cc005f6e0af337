package taskqueue

import "math/bits"

// bitset is a set of small non-negative integers, a bit each: Trained
// copies the entries Done in a word per 64 of them.
type bitset []uint64

func (b *bitset) set(i int) {
	for len(*b) <= i/64 {
		*b = append(*b, 0)
	}
	(*b)[i/64] |= 1 << (i % 64)
}

func (b bitset) unset(i int) {
	if i/64 < len(b) {
		b[i/64] &^= 1 << (i % 64)
	}
}

// copyFirst returns a copy of the members below n.
func (b bitset) copyFirst(n int) bitset {
	c := make(bitset, (n+63)/64)
	copy(c, b)
	if r := n % 64; r != 0 && len(c) > 0 {
		c[len(c)-1] &= 1<<r - 1
	}
	return c
}

// members returns the members, ascending.
func (b bitset) members() []int {
	n := 0
	for _, w := range b {
		n += bits.OnesCount64(w)
	}
	if n == 0 {
		return nil
	}
	out := make([]int, 0, n)
	for i, w := range b {
		for w != 0 {
			out = append(out, i*64+bits.TrailingZeros64(w))
			w &= w - 1
		}
	}
	return out
}
