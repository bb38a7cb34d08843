package filedrop_test

import (
	"fmt"

	"github.com/zcgw/zcgw/gateway/filedrop"
)

// The txid, idempotency key and account hashes of a dropped record are
// derived from the file's bytes only, so a restart recomputes the same
// ones and the coordinator replays instead of creating a second transfer.
func ExampleTxID() {
	fileHash := "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"
	fmt.Println(filedrop.TxID(fileHash, 2))
	fmt.Println(filedrop.IdempotencyKey(fileHash, 2))
	fmt.Println(filedrop.AccountHash(filedrop.DefaultAccountSalt, "0002", "010", 1, "2222222")[:20])
	// Output:
	// TX-47139845544f679f1c-0000000002
	// FD:9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08:2
	// h:9030c90cbfa9aa4337
}
