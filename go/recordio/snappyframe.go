package recordio

import (
	"encoding/binary"
	"hash/crc32"

	"github.com/golang/snappy"
)

// The framed snappy format (github.com/google/snappy framing_format.txt):
// a stream identifier, then frames of a type byte, a 3-byte little-endian
// length, and for data frames a masked CRC-32C of the uncompressed bytes.
const (
	frameCompressed   = 0x00
	frameUncompressed = 0x01
	framePadding      = 0xfe
	frameStreamID     = 0xff
	frameHeaderLen    = 4
	frameChecksumLen  = 4
	// maxFrameData is the most uncompressed bytes one frame may carry.
	maxFrameData = 65536
)

var (
	streamIdentifier = []byte{frameStreamID, 0x06, 0x00, 0x00, 's', 'N', 'a', 'P', 'p', 'Y'}
	castagnoli       = crc32.MakeTable(crc32.Castagnoli)
)

func maskedCRC(b []byte) uint32 {
	c := crc32.Checksum(b, castagnoli)
	return (c>>15 | c<<17) + 0xa282ead8
}

// appendSnappyFramed appends src as one framed snappy stream, split into
// 64 KiB frames; a frame is stored uncompressed unless compression saves at
// least an eighth, the rule of the reference writer.
func appendSnappyFramed(dst, src []byte, scratch []byte) ([]byte, []byte) {
	dst = append(dst, streamIdentifier...)
	for len(src) > 0 {
		block := src[:min(len(src), maxFrameData)]
		src = src[len(block):]
		scratch = snappy.Encode(scratch[:cap(scratch)], block)
		kind, data := byte(frameCompressed), scratch
		if len(scratch) >= len(block)-len(block)/8 {
			kind, data = frameUncompressed, block
		}
		n := frameChecksumLen + len(data)
		dst = append(dst, kind, byte(n), byte(n>>8), byte(n>>16))
		dst = binary.LittleEndian.AppendUint32(dst, maskedCRC(block))
		dst = append(dst, data...)
	}
	return dst, scratch
}

// appendSnappyUnframed decodes a framed snappy stream from src, appending the
// uncompressed bytes to dst. It verifies every frame's checksum and refuses to
// grow dst past limit.
func appendSnappyUnframed(dst, src []byte, limit int) ([]byte, error) {
	if len(src) < len(streamIdentifier) || string(src[:len(streamIdentifier)]) != string(streamIdentifier) {
		return dst, kindf(ErrDecompress, ": snappy stream identifier missing")
	}
	for len(src) > 0 {
		if len(src) < frameHeaderLen {
			return dst, kindf(ErrDecompress, ": snappy frame header cut short")
		}
		kind := src[0]
		n := int(src[1]) | int(src[2])<<8 | int(src[3])<<16
		src = src[frameHeaderLen:]
		if n > len(src) {
			return dst, kindf(ErrDecompress, ": snappy frame of %d bytes, %d left", n, len(src))
		}
		body := src[:n]
		src = src[n:]
		var err error
		switch {
		case kind == frameCompressed || kind == frameUncompressed:
			dst, err = appendFrameData(dst, kind, body, limit)
		case kind == frameStreamID:
			if string(body) != string(streamIdentifier[frameHeaderLen:]) {
				err = kindf(ErrDecompress, ": bad snappy stream identifier")
			}
		case kind >= 0x80: // padding and skippable frames carry nothing
		default:
			err = kindf(ErrDecompress, ": reserved snappy frame type %#02x", kind)
		}
		if err != nil {
			return dst, err
		}
	}
	return dst, nil
}

func appendFrameData(dst []byte, kind byte, body []byte, limit int) ([]byte, error) {
	if len(body) < frameChecksumLen {
		return dst, kindf(ErrDecompress, ": snappy data frame without checksum")
	}
	want := binary.LittleEndian.Uint32(body)
	body = body[frameChecksumLen:]
	size := len(body)
	if kind == frameCompressed {
		var err error
		if size, err = snappy.DecodedLen(body); err != nil {
			return dst, kindf(ErrDecompress, ": snappy: %v", err)
		}
	}
	if size > maxFrameData {
		return dst, kindf(ErrDecompress, ": snappy frame of %d bytes, more than %d", size, maxFrameData)
	}
	if len(dst)+size > limit {
		return dst, kindf(ErrTooLarge, ": uncompressed payload over %d bytes", limit)
	}
	start := len(dst)
	dst = grow(dst, size)
	if kind == frameCompressed {
		if _, err := snappy.Decode(dst[start:], body); err != nil {
			return dst[:start], kindf(ErrDecompress, ": snappy: %v", err)
		}
	} else {
		copy(dst[start:], body)
	}
	if got := maskedCRC(dst[start:]); got != want {
		return dst[:start], kindf(ErrDecompress, ": snappy frame checksum %#08x, want %#08x", got, want)
	}
	return dst, nil
}

// grow extends b by n bytes, reallocating at most geometrically.
func grow(b []byte, n int) []byte {
	if len(b)+n <= cap(b) {
		return b[:len(b)+n]
	}
	nb := make([]byte, len(b)+n, 2*cap(b)+n)
	copy(nb, b)
	return nb
}
