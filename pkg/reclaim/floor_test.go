package reclaim_test

import (
	"testing"

	"github.com/chatd/chatd/pkg/reclaim"
)

func TestFloor(t *testing.T) {
	tests := []struct {
		name        string
		first, last uint64
		consumers   []reclaim.ConsumerFloor
		pins        []uint64
		want        uint64
	}{
		{"nothing waits: everything may go", 5, 9, nil, nil, 10},
		{"consumer ack floor bounds it", 1, 9, []reclaim.ConsumerFloor{{AckFloor: 4}}, nil, 5},
		{"lowest consumer wins", 1, 9, []reclaim.ConsumerFloor{{AckFloor: 7}, {AckFloor: 2}}, nil, 3},
		{"a pin below the ack floors holds it", 1, 9, []reclaim.ConsumerFloor{{AckFloor: 7}}, []uint64{4, 6}, 4},
		{"never below the first sequence", 5, 9, []reclaim.ConsumerFloor{{AckFloor: 0}}, nil, 5},
		{"never above last+1", 1, 9, []reclaim.ConsumerFloor{{AckFloor: 20}}, nil, 10},
		{"empty stream", 1, 0, []reclaim.ConsumerFloor{{AckFloor: 0}}, nil, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := reclaim.Floor(tt.first, tt.last, tt.consumers, tt.pins); got != tt.want {
				t.Fatalf("got %d, want %d", got, tt.want)
			}
		})
	}
}
