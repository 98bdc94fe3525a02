package measure

import (
	"slices"
	"time"
)

func median(ts []time.Duration) time.Duration {
	s := slices.Clone(ts)
	slices.Sort(s)
	return s[len(s)/2]
}

// MedianThroughput returns the result whose throughput is the median of
// several repetitions (the lower middle one for an even count).
func MedianThroughput(rs []Result) Result {
	s := slices.Clone(rs)
	slices.SortFunc(s, func(a, b Result) int {
		switch {
		case a.Throughput < b.Throughput:
			return -1
		case a.Throughput > b.Throughput:
			return 1
		}
		return 0
	})
	return s[(len(s)-1)/2]
}
