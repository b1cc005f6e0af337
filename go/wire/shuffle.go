package wire

// A job's reproducible order (the master's -shuffle-seed). The master draws
// the order of each pass's tasks, and the seed of each task's records
// (Task.Seed), from the job's seed; a trainer shuffles a task's records
// with Shuffle(records, Task.Seed). The algorithm below is part of the
// contract: a client in another language must produce the same order from
// the same seed (python/trainmaster/shuffle.py does), or two runs of a job
// would not train in the same order.

// splitmix64 is the generator of the contract (Steele, Lea and Flood's
// SplitMix64): its state is the seed, and each output adds the golden
// ratio constant to the state and mixes the result. All arithmetic wraps
// at 64 bits.
type splitmix64 uint64

func (s *splitmix64) next() uint64 {
	*s += 0x9E3779B97F4A7C15
	z := uint64(*s)
	z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9
	z = (z ^ (z >> 27)) * 0x94D049BB133111EB
	return z ^ (z >> 31)
}

// Shuffle returns the order in which to train the n records of a task
// whose Seed is seed: a permutation p of 0..n-1, record p[0] first. It is
// the Fisher-Yates shuffle from the last index down, starting from the
// identity, drawing from splitmix64 with its state set to seed:
//
//	p = [0, 1, ..., n-1]
//	for i = n-1 down to 1:
//	    j = next() mod (i+1)    // next() as an unsigned 64-bit integer
//	    swap p[i] and p[j]
//
// where next() adds 0x9E3779B97F4A7C15 to the state and returns
// z ^ (z >> 31) of z = state; z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9;
// z = (z ^ (z >> 27)) * 0x94D049BB133111EB, every operation modulo 2^64.
// Shuffle(10, 42) is [0 9 5 8 6 4 7 2 1 3]. For n <= 0 it returns an empty
// order.
func Shuffle(n int, seed uint64) []int {
	p := make([]int, max(n, 0))
	for i := range p {
		p[i] = i
	}
	s := splitmix64(seed)
	for i := len(p) - 1; i > 0; i-- {
		j := int(s.next() % uint64(i+1))
		p[i], p[j] = p[j], p[i]
	}
	return p
}

// TaskSeed returns the seed of a task's records in one pass of a job whose
// seed is jobSeed: mix(mix(mix(jobSeed) ^ pass) ^ task), where mix(x) is
// the first output of splitmix64 with its state set to x and pass and task
// are taken as 64-bit two's complement; 1 if that is 0, since a Seed of 0
// means "file order". The master sets Task.Seed to it; a trainer needs only
// Task.Seed.
func TaskSeed(jobSeed uint64, pass, task int) uint64 {
	mix := func(x uint64) uint64 {
		s := splitmix64(x)
		return s.next()
	}
	seed := mix(mix(mix(jobSeed)^uint64(pass)) ^ uint64(task))
	if seed == 0 {
		return 1
	}
	return seed
}
