package fixed

import (
	"fmt"
	"sync"
	"testing"

	"github.com/zcgw/zcgw/formats/charset"
)

// Layouts are built once and shared: concurrent first use, Marshal and
// Unmarshal must be race-free (run with -race).
func TestConcurrentUse(t *testing.T) {
	type fresh struct {
		A string `fixed:"1,5,X"`
		B int64  `fixed:"6,6,S9"`
	}
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	for g := 0; g < 16; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			for i := 0; i < 200; i++ {
				in := fresh{A: "AB", B: int64(g*1000 + i)}
				rec, err := Marshal(in, charset.EBCDIC290)
				if err != nil {
					errs <- err
					return
				}
				var out fresh
				if err := Unmarshal(rec, &out, charset.EBCDIC290); err != nil {
					errs <- err
					return
				}
				if out != in {
					errs <- fmt.Errorf("got %+v want %+v", out, in)
					return
				}
			}
		}(g)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
}
