package main

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/pkg/errors"
)

// The trainers' traces (cmd/trainer -trace): a line "pass task position"
// for every record trained, written at once, so that what a trainer
// killed outright had trained is known; and, for a rank taking data
// checkpoints, a line "checkpoint ID" for each checkpoint stored, after
// the records trained before it.

// scanTrace reads the trace at path: onRecord gets every record line (a
// last line cut short by a kill is skipped), onCheckpoint (if not nil) the
// ID of every checkpoint line. It stops after the line of checkpoint
// until (0: at the end) and reports whether it met that line. A trace
// never created (a trainer killed before it opened it) is empty.
func scanTrace(path string, until int64, onRecord func(pass, task, pos int), onCheckpoint func(id int64)) (bool, error) {
	f, err := os.Open(path)
	if os.IsNotExist(err) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	defer f.Close()
	lines := bufio.NewScanner(f)
	for lines.Scan() {
		line := lines.Text()
		if rest, ok := strings.CutPrefix(line, "checkpoint "); ok {
			id, err := strconv.ParseInt(rest, 10, 64)
			if err != nil {
				continue
			}
			if onCheckpoint != nil {
				onCheckpoint(id)
			}
			if id == until {
				return true, nil
			}
			continue
		}
		var pass, task, pos int
		if n, _ := fmt.Sscanf(line, "%d %d %d", &pass, &task, &pos); n != 3 || pos < 0 || pos > 1<<24 {
			continue // the last line of a trainer killed while writing it
		}
		onRecord(pass, task, pos)
	}
	return false, lines.Err()
}

// counts is how many times each record was trained: {pass, task} ->
// count by position.
type counts map[[2]int][]int

func (c counts) add(pass, task, pos int) {
	k := [2]int{pass, task}
	n := c[k]
	for len(n) <= pos {
		n = append(n, 0)
	}
	n[pos]++
	c[k] = n
}

// readTraces counts how many times each record of each task was trained
// in each pass, from the trainers' -trace files: {pass, task} -> count by
// position; and marks the records a trainer in killed trained:
// {pass, task} -> by position.
func readTraces(dir string, killed map[string]bool) (map[[2]int][]int, map[[2]int][]bool, error) {
	paths, err := filepath.Glob(filepath.Join(dir, "trace-*"))
	if err != nil {
		return nil, nil, err
	}
	trained := counts{}
	byKilled := map[[2]int][]bool{}
	for _, path := range paths {
		wasKilled := killed[strings.TrimPrefix(filepath.Base(path), "trace-")]
		_, err := scanTrace(path, 0, func(pass, task, pos int) {
			trained.add(pass, task, pos)
			if wasKilled {
				k := byKilled[[2]int{pass, task}]
				for len(k) <= pos {
					k = append(k, false)
				}
				k[pos] = true
				byKilled[[2]int{pass, task}] = k
			}
		}, nil)
		if err != nil {
			return nil, nil, err
		}
	}
	return trained, byKilled, nil
}

// commonCheckpoints returns the checkpoints every trace of paths
// recorded, oldest first.
func commonCheckpoints(paths []string) ([]int64, error) {
	seen := map[int64]int{}
	for _, path := range paths {
		mine := map[int64]bool{}
		if _, err := scanTrace(path, 0, func(int, int, int) {}, func(id int64) { mine[id] = true }); err != nil {
			return nil, errors.WithMessage(err, "read the checkpoints of a trace")
		}
		for id := range mine {
			seen[id]++
		}
	}
	var common []int64
	for id, n := range seen {
		if n == len(paths) {
			common = append(common, id)
		}
	}
	slices.Sort(common)
	return common, nil
}
