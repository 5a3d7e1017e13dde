package vector

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"math"
	"slices"
	"time"
)

// The local store's on-disk encoding: little-endian, strings and slices
// length-prefixed with uvarints, every file and log record guarded by a
// CRC-32C.

var crcTable = crc32.MakeTable(crc32.Castagnoli)

var errCorrupt = errors.New("corrupt data")

type encoder struct{ b []byte }

func (e *encoder) uvarint(v uint64) { e.b = binary.AppendUvarint(e.b, v) }
func (e *encoder) varint(v int64)   { e.b = binary.AppendVarint(e.b, v) }
func (e *encoder) byte(v byte)      { e.b = append(e.b, v) }

func (e *encoder) string(s string) {
	e.uvarint(uint64(len(s)))
	e.b = append(e.b, s...)
}

func (e *encoder) point(p *Point) {
	for _, s := range []string{p.ID, p.AccountID, p.UserID, p.AgentID, p.Scope, p.Kind, p.Category, p.Text} {
		e.string(s)
	}
	e.uvarint(uint64(len(p.Vector)))
	for _, x := range p.Vector {
		e.b = binary.LittleEndian.AppendUint32(e.b, math.Float32bits(x))
	}
	keys := make([]string, 0, len(p.Payload))
	for k := range p.Payload {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	e.uvarint(uint64(len(keys)))
	for _, k := range keys {
		e.string(k)
		e.string(p.Payload[k])
	}
	if p.CreatedAt.IsZero() {
		e.byte(0)
	} else {
		e.byte(1)
		e.varint(p.CreatedAt.Unix())
		e.uvarint(uint64(p.CreatedAt.Nanosecond()))
	}
}

// encodedSize is an upper bound of the bytes encoder.point writes for p, so
// a snapshot's buffer is allocated once.
func encodedSize(p *Point) int {
	n := len(p.ID) + len(p.AccountID) + len(p.UserID) + len(p.AgentID) + len(p.Scope) + len(p.Kind) +
		len(p.Category) + len(p.Text) + 8*binary.MaxVarintLen64 + 4*len(p.Vector) + 3*binary.MaxVarintLen64 + 1
	for k, v := range p.Payload {
		n += len(k) + len(v) + 2*binary.MaxVarintLen64
	}
	return n + 2*binary.MaxVarintLen64
}

// decoder reads what encoder wrote; the first error sticks.
type decoder struct {
	b   []byte
	err error
}

func (d *decoder) fail() {
	if d.err == nil {
		d.err = errCorrupt
	}
	d.b = nil
}

func (d *decoder) uvarint() uint64 {
	v, n := binary.Uvarint(d.b)
	if n <= 0 {
		d.fail()
		return 0
	}
	d.b = d.b[n:]
	return v
}

func (d *decoder) varint() int64 {
	v, n := binary.Varint(d.b)
	if n <= 0 {
		d.fail()
		return 0
	}
	d.b = d.b[n:]
	return v
}

func (d *decoder) byte() byte {
	if len(d.b) < 1 {
		d.fail()
		return 0
	}
	v := d.b[0]
	d.b = d.b[1:]
	return v
}

// count reads a length and checks that at least min bytes per item remain.
func (d *decoder) count(min int) int {
	n := d.uvarint()
	if d.err != nil || n > uint64(len(d.b)/max(min, 1)) {
		d.fail()
		return 0
	}
	return int(n)
}

func (d *decoder) string() string {
	n := d.count(1)
	if d.err != nil {
		return ""
	}
	s := string(d.b[:n])
	d.b = d.b[n:]
	return s
}

// point decodes the next point. Its vector is decoded into *vec when vec is not nil (grown as
// needed, and overwritten by the next call), into a new slice otherwise.
func (d *decoder) point(vec *[]float32) Point {
	var p Point
	for _, s := range []*string{&p.ID, &p.AccountID, &p.UserID, &p.AgentID, &p.Scope, &p.Kind, &p.Category, &p.Text} {
		*s = d.string()
	}
	if n := d.count(4); d.err == nil {
		switch {
		case vec == nil:
			p.Vector = make([]float32, n)
		case cap(*vec) >= n:
			p.Vector = (*vec)[:n]
		default:
			*vec = make([]float32, n)
			p.Vector = *vec
		}
		for i := range p.Vector {
			p.Vector[i] = math.Float32frombits(binary.LittleEndian.Uint32(d.b[4*i:]))
		}
		d.b = d.b[4*n:]
	}
	if n := d.count(2); d.err == nil && n > 0 {
		p.Payload = make(map[string]string, n)
		for range n {
			k := d.string()
			p.Payload[k] = d.string()
		}
	}
	if d.byte() == 1 {
		sec := d.varint()
		nsec := d.uvarint()
		if nsec >= 1e9 {
			d.fail()
		}
		p.CreatedAt = time.Unix(sec, int64(nsec)).UTC()
	}
	return p
}

// Snapshot file: magic, account, user, point count, points, CRC-32C of all
// that.
const snapMagic = "MBVSNAP1"

// encodeSnapshot encodes the n points each yields, twice: once to size the buffer (load
// false: vectors of the right length, not yet read), once to encode them.
func encodeSnapshot(account, user string, n int, each func(load bool, yield func(*Point) bool)) []byte {
	size := len(snapMagic) + len(account) + len(user) + 32
	each(false, func(p *Point) bool {
		size += encodedSize(p)
		return true
	})
	e := encoder{b: make([]byte, 0, size)}
	e.b = append(e.b, snapMagic...)
	e.string(account)
	e.string(user)
	e.uvarint(uint64(n))
	each(true, func(p *Point) bool {
		e.point(p)
		return true
	})
	return binary.LittleEndian.AppendUint32(e.b, crc32.Checksum(e.b, crcTable))
}

// decodeSnapshot checks b's checksum, then hands its account and user to begin (false stops
// it: the snapshot is not the one expected) and each of its points to each, one at a time, so
// that a large snapshot is never held decoded as a whole. A point's Vector is valid only
// during its call: each copies what it keeps.
func decodeSnapshot(b []byte, begin func(account, user string) bool, each func(Point)) error {
	if len(b) < len(snapMagic)+4 || string(b[:len(snapMagic)]) != snapMagic {
		return fmt.Errorf("snapshot header: %w", errCorrupt)
	}
	body, sum := b[:len(b)-4], binary.LittleEndian.Uint32(b[len(b)-4:])
	if crc32.Checksum(body, crcTable) != sum {
		return fmt.Errorf("snapshot checksum: %w", errCorrupt)
	}
	d := decoder{b: body[len(snapMagic):]}
	account, user := d.string(), d.string()
	if d.err != nil || !begin(account, user) {
		return fmt.Errorf("snapshot tenant: %w", errCorrupt)
	}
	n := d.count(8)
	// One vector buffer for every point: a snapshot is the bulk of a restart's reading, and
	// each copies the vector into the index (blocks or spill file), so a vector per point
	// would be the restart's largest garbage.
	var vec []float32
	for range n {
		p := d.point(&vec)
		if d.err != nil {
			break
		}
		each(p)
	}
	if d.err == nil && len(d.b) != 0 {
		d.fail()
	}
	if d.err != nil {
		return fmt.Errorf("snapshot body: %w", d.err)
	}
	return nil
}

// Log records: u32 payload length, u32 CRC-32C of the payload, payload.
// Payload: op byte, then for opHeader account and user, for opUpsert a
// point count and points, for opDelete an id count and ids.
const (
	opHeader byte = 1
	opUpsert byte = 2
	opDelete byte = 3

	recordHeaderLen = 8
)

type logRecord struct {
	op            byte
	account, user string
	points        []Point
	ids           []string
}

func encodeRecord(r *logRecord) []byte {
	e := encoder{b: make([]byte, recordHeaderLen, 256)}
	e.byte(r.op)
	switch r.op {
	case opHeader:
		e.string(r.account)
		e.string(r.user)
	case opUpsert:
		e.uvarint(uint64(len(r.points)))
		for i := range r.points {
			e.point(&r.points[i])
		}
	case opDelete:
		e.uvarint(uint64(len(r.ids)))
		for _, id := range r.ids {
			e.string(id)
		}
	}
	payload := e.b[recordHeaderLen:]
	binary.LittleEndian.PutUint32(e.b[0:4], uint32(len(payload)))
	binary.LittleEndian.PutUint32(e.b[4:8], crc32.Checksum(payload, crcTable))
	return e.b
}

// decodeRecords returns the records of a log and the length of its valid
// prefix: a torn or corrupt tail (a crash mid-append) ends the log there.
func decodeRecords(b []byte) (recs []logRecord, valid int) {
	for off := 0; ; {
		if len(b)-off < recordHeaderLen {
			return recs, off
		}
		n := int(binary.LittleEndian.Uint32(b[off:]))
		sum := binary.LittleEndian.Uint32(b[off+4:])
		if n < 1 || n > len(b)-off-recordHeaderLen {
			return recs, off
		}
		payload := b[off+recordHeaderLen : off+recordHeaderLen+n]
		if crc32.Checksum(payload, crcTable) != sum {
			return recs, off
		}
		d := decoder{b: payload}
		r := logRecord{op: d.byte()}
		switch r.op {
		case opHeader:
			r.account, r.user = d.string(), d.string()
		case opUpsert:
			cnt := d.count(8)
			for range cnt {
				r.points = append(r.points, d.point(nil))
			}
		case opDelete:
			cnt := d.count(1)
			for range cnt {
				r.ids = append(r.ids, d.string())
			}
		default:
			d.fail()
		}
		if d.err != nil || len(d.b) != 0 {
			return recs, off
		}
		recs = append(recs, r)
		off += recordHeaderLen + n
	}
}
