package uuid

import (
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"sync"
	"time"
)

// New returns a random (version 4) UUID in its 36-character text form.
func New() string {
	var b [16]byte
	fill(b[:])
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return format(b)
}

// NewV7 returns a version 7 UUID for the instant now: 48 bits of Unix
// milliseconds, then a 42-bit counter that restarts at a random value
// each millisecond and keeps the ids of one process strictly increasing
// even when now does not move (a manual clock) or steps back, then 32
// random bits. Uniqueness across processes rests on the random start of
// the counter and the random tail.
func NewV7(now time.Time) string {
	var r [8]byte
	fill(r[:])
	ms := uint64(now.UnixMilli())
	last.Lock()
	if ms > last.ms {
		last.ms, last.ctr = ms, binary.BigEndian.Uint64(r[:])>>23 // 41 random bits: room to count
	} else {
		last.ctr++
		if last.ctr >= 1<<42 {
			last.ms, last.ctr = last.ms+1, 0
		}
	}
	ms, ctr := last.ms, last.ctr
	last.Unlock()
	var b [16]byte
	binary.BigEndian.PutUint64(b[0:8], ms<<16)
	b[6] = 0x70 | byte(ctr>>38)&0x0f // version 7, counter bits 41..38
	b[7] = byte(ctr >> 30)           // counter bits 37..30
	b[8] = 0x80 | byte(ctr>>24)&0x3f // variant, counter bits 29..24
	b[9], b[10], b[11] = byte(ctr>>16), byte(ctr>>8), byte(ctr)
	copy(b[12:], r[:4])
	return format(b)
}

// last is the millisecond and counter NewV7 last used.
var last struct {
	sync.Mutex
	ms, ctr uint64
}

func fill(b []byte) {
	if _, err := rand.Read(b); err != nil {
		panic("uuid: crypto/rand failed: " + err.Error()) // never on supported platforms
	}
}

func format(b [16]byte) string {
	h := hex.EncodeToString(b[:])
	return h[0:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:]
}
