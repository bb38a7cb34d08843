package embedded

import (
	"encoding/binary"
	"fmt"
	"sort"

	"github.com/zcgw/zcgw/adapter/mq"
)

// The stored form of message properties (column mq_message.properties):
//
//	version  byte   = 1
//	count    uvarint
//	count x { nameLen uvarint, name bytes, valueLen uvarint, value bytes }
//
// Names are sorted strictly ascending (so each name appears once and the
// encoding of a map is unique) and are valid mq property names.
const propsVersion = 1

// maxProps bounds the number of properties in one message.
const maxProps = 4096

// PropertiesError says where and why stored properties failed to decode.
type PropertiesError struct {
	Offset int    // byte offset in the encoded form
	Reason string // what is wrong there
}

func (e *PropertiesError) Error() string {
	return fmt.Sprintf("mq/embedded: properties at byte %d: %s", e.Offset, e.Reason)
}

// encodeProperties returns the stored form of props (nil and empty encode
// alike).
func encodeProperties(props map[string]string) []byte {
	names := make([]string, 0, len(props))
	size := 1 + binary.MaxVarintLen64
	for k, v := range props {
		names = append(names, k)
		size += 2*binary.MaxVarintLen64 + len(k) + len(v)
	}
	sort.Strings(names)
	b := make([]byte, 0, size)
	b = append(b, propsVersion)
	b = binary.AppendUvarint(b, uint64(len(names)))
	for _, k := range names {
		v := props[k]
		b = binary.AppendUvarint(b, uint64(len(k)))
		b = append(b, k...)
		b = binary.AppendUvarint(b, uint64(len(v)))
		b = append(b, v...)
	}
	return b
}

// decodeProperties parses the stored form. It never panics; on bad input
// it returns a *PropertiesError with the offset. Zero properties decode to
// a nil map.
func decodeProperties(b []byte) (map[string]string, error) {
	if len(b) == 0 {
		return nil, &PropertiesError{Offset: 0, Reason: "empty encoding (missing version byte)"}
	}
	if b[0] != propsVersion {
		return nil, &PropertiesError{Offset: 0, Reason: fmt.Sprintf("unknown version %d", b[0])}
	}
	off := 1
	readLen := func(what string) (int, error) {
		n, w := binary.Uvarint(b[off:])
		if w <= 0 {
			return 0, &PropertiesError{Offset: off, Reason: "bad " + what + " varint"}
		}
		if w != len(binary.AppendUvarint(nil, n)) {
			return 0, &PropertiesError{Offset: off, Reason: "non-minimal " + what + " varint"}
		}
		if n > uint64(len(b)) {
			return 0, &PropertiesError{Offset: off, Reason: fmt.Sprintf("%s %d exceeds the encoding's %d bytes", what, n, len(b))}
		}
		off += w
		return int(n), nil
	}
	count, err := readLen("count")
	if err != nil {
		return nil, err
	}
	if count > maxProps {
		return nil, &PropertiesError{Offset: 1, Reason: fmt.Sprintf("count %d exceeds %d", count, maxProps)}
	}
	if count == 0 {
		if off != len(b) {
			return nil, &PropertiesError{Offset: off, Reason: "trailing bytes"}
		}
		return nil, nil
	}
	props := make(map[string]string, min(count, 64))
	prev := ""
	for i := 0; i < count; i++ {
		nameAt := off
		n, err := readLen("name length")
		if err != nil {
			return nil, err
		}
		if n > len(b)-off {
			return nil, &PropertiesError{Offset: nameAt, Reason: fmt.Sprintf("name of property %d runs past the end", i)}
		}
		name := string(b[off : off+n])
		if err := mq.ValidatePropertyName(name); err != nil {
			return nil, &PropertiesError{Offset: off, Reason: err.Error()}
		}
		if i > 0 && name <= prev {
			return nil, &PropertiesError{Offset: off, Reason: fmt.Sprintf("name %q not after %q (names must be sorted and unique)", name, prev)}
		}
		off += n
		valueAt := off
		n, err = readLen("value length")
		if err != nil {
			return nil, err
		}
		if n > len(b)-off {
			return nil, &PropertiesError{Offset: valueAt, Reason: fmt.Sprintf("value of %q runs past the end", name)}
		}
		props[name] = string(b[off : off+n])
		off += n
		prev = name
	}
	if off != len(b) {
		return nil, &PropertiesError{Offset: off, Reason: "trailing bytes"}
	}
	return props, nil
}
