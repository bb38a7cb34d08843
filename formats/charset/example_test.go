package charset_test

import (
	"fmt"

	"github.com/zcgw/zcgw/formats/charset"
)

func Example() {
	// A host record field in Japanese EBCDIC (CCSID 290) to canonical bytes
	// and UTF-8.
	host := []byte{0xA9, 0xA4, 0x91, 0xBE, 0x40, 0x91, 0xBB, 0x83}
	canon := make([]byte, len(host))
	if err := charset.EBCDIC290.ToCanonical(canon, host, nil); err != nil {
		fmt.Println(err)
		return
	}
	s, _ := charset.CanonicalString(canon)
	fmt.Printf("% X %s\n", canon, s)

	// Full-width input converts when a unique half-width form exists.
	hw, err := charset.AppendHalfWidth(nil, "ガス　（カ）")
	fmt.Printf("% X %v\n", hw, err)
	_, err = charset.AppendHalfWidth(nil, "ガス漢")
	fmt.Println(err)
	// Output:
	// D4 CF C0 DE 20 C0 DB B3 ﾔﾏﾀﾞ ﾀﾛｳ
	// B6 DE BD 20 28 B6 29 <nil>
	// character '漢' (U+6F22) at position 3: no half-width (JIS X 0201) form
}
