package uuid_test

import (
	"fmt"
	"regexp"
	"sync"
	"testing"
	"time"

	"github.com/zcgw/zcgw/coordinator/uuid"
)

var (
	v4 = regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`)
	v7 = regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`)
)

func TestNewIsARandomVersion4(t *testing.T) {
	seen := map[string]bool{}
	for range 1000 {
		id := uuid.New()
		if !v4.MatchString(id) {
			t.Fatalf("%q is not a version 4 UUID", id)
		}
		if seen[id] {
			t.Fatalf("%q repeated", id)
		}
		seen[id] = true
	}
}

// Ids of one process increase strictly, also when the clock stands still
// or steps back, and from racing goroutines; their first 48 bits are the
// millisecond of the instant given.
func TestNewV7Increases(t *testing.T) {
	at := time.Date(2026, 12, 3, 5, 0, 0, 0, time.UTC)
	first := uuid.NewV7(at)
	if !v7.MatchString(first) {
		t.Fatalf("%q is not a version 7 UUID", first)
	}
	if got, want := first[:8]+first[9:13], fmt.Sprintf("%012x", at.UnixMilli()); got != want {
		t.Fatalf("time bits %s, want %s", got, want)
	}
	prev := first
	for i := range 5000 {
		now := at
		if i%3 == 2 {
			now = at.Add(-time.Second) // a step back
		}
		id := uuid.NewV7(now)
		if id <= prev {
			t.Fatalf("id %d %q not after %q", i, id, prev)
		}
		prev = id
	}
	var mu sync.Mutex
	all := map[string]bool{}
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 500 {
				id := uuid.NewV7(at)
				mu.Lock()
				if all[id] {
					t.Errorf("%q repeated", id)
				}
				all[id] = true
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
}

func ExampleNew() {
	fmt.Println(len(uuid.New()))
	// Output: 36
}
