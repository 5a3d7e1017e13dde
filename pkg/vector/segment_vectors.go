package vector

// A segment's float32 vectors live in off-heap blocks while it is searched exactly. Once it
// has more points than the store's exact maximum it is quantised: int8 codes (quant.go) in
// off-heap blocks are what a search scans, and the float32 vectors re-score the candidates.
// They stay in their blocks while the segment has at most the store's spill minimum of points
// (a re-scoring then reads memory: no system call per candidate); beyond it they move to a
// spill file (spill.go), read back for the candidates a search re-scores and the points it
// returns, and come back into blocks below half the minimum. Below half the exact maximum the
// codes are dropped and the segment is searched exactly again.

// code returns the codes of point i (not a copy). Quantised segments only.
func (s *segment) code(i int) []int8 {
	b := s.codes[i/blockPoints].c
	o := (i % blockPoints) * s.dim
	return b[o : o+s.dim : o+s.dim]
}

// storeVec sets the vector of position i, a new last point (i = len) or an existing one; inv
// is 1/‖v‖ (0 for a zero vector). A spill write that fails brings the vectors back into
// blocks.
func (s *segment) storeVec(i int, v []float32, inv float32) {
	if s.quant {
		for i/blockPoints >= len(s.codes) {
			s.codes = append(s.codes, newCodeBlock(blockPoints*s.dim))
		}
		sc := quantise(v, inv, s.code(i))
		if i == len(s.scale) {
			s.scale = append(s.scale, sc)
		} else {
			s.scale[i] = sc
		}
	}
	if s.spill != nil {
		if err := s.spill.write(i, v); err == nil {
			return
		}
		s.noSpill = true
		if err := s.unspill(max(i, s.len())); err != nil {
			s.err = err
			return
		}
	}
	for i/blockPoints >= len(s.blocks) {
		s.blocks = append(s.blocks, newBlock(blockPoints*s.dim))
	}
	copy(s.vec(i), v)
}

// loadVec returns the vector of position i: the stored slice itself when the vectors are in
// blocks, else read from the spill file into buf (len dim).
func (s *segment) loadVec(i int, buf []float32) ([]float32, error) {
	if s.spill == nil {
		return s.vec(i), nil
	}
	if err := s.spill.read(i, buf); err != nil {
		return nil, err
	}
	return buf, nil
}

// moveVec moves the vector (and code) of position from to position to (a removal filling its
// hole).
func (s *segment) moveVec(to, from int) error {
	if s.spill == nil {
		copy(s.vec(to), s.vec(from))
		if s.quant {
			copy(s.code(to), s.code(from))
			s.scale[to] = s.scale[from]
		}
		return nil
	}
	v, err := s.loadVec(from, make([]float32, s.dim))
	if err != nil {
		return err
	}
	s.storeVec(to, v, s.inv[to])
	return nil
}

// dropLast releases the storage of the last position n-1 when it was alone in its block
// (n = len before the removal).
func (s *segment) dropLast(n int) {
	last := n - 1
	if last%blockPoints != 0 {
		return
	}
	if s.quant {
		s.codes[len(s.codes)-1].free()
		s.codes = s.codes[:len(s.codes)-1]
	}
	if s.spill == nil {
		s.blocks[len(s.blocks)-1].free()
		s.blocks = s.blocks[:len(s.blocks)-1]
	}
}

// quantise gives every point of the segment its codes; the vectors stay where they are.
func (s *segment) quantise() {
	n := s.len()
	codes := make([]codeBlock, 0, (n+blockPoints-1)/blockPoints)
	scale := make([]float32, n)
	for from := 0; from < n; from += blockPoints {
		cb := newCodeBlock(blockPoints * s.dim)
		codes = append(codes, cb)
		for i := from; i < min(from+blockPoints, n); i++ {
			o := (i - from) * s.dim
			scale[i] = quantise(s.vec(i), s.inv[i], cb.c[o:o+s.dim])
		}
	}
	s.codes, s.scale, s.quant = codes, scale, true
}

// dequantise drops the codes: the segment is searched exactly, from its blocks (the vectors
// must be in them).
func (s *segment) dequantise() {
	for i := range s.codes {
		s.codes[i].free()
	}
	s.codes, s.scale, s.quant = nil, nil, false
}

// spillTo moves the vectors of a quantised segment to a spill file under dir and frees their
// blocks. On an error the segment stays as it was.
func (s *segment) spillTo(dir string) error {
	sf, err := openSpill(dir, s.dim)
	if err != nil {
		return err
	}
	n := s.len()
	for b := range s.blocks {
		from, to := b*blockPoints, min((b+1)*blockPoints, n)
		if from >= to {
			break
		}
		if _, err := sf.f.WriteAt(floatBytes(s.blocks[b].v[:(to-from)*s.dim]), int64(from)*int64(s.dim)*4); err != nil {
			sf.close()
			return err
		}
	}
	for b := range s.blocks {
		s.blocks[b].free()
	}
	s.blocks, s.spill = nil, sf
	return nil
}

// unspill moves the vectors of positions [0, n) back into blocks and closes the spill file;
// the codes stay. On a read error the vectors stay spilled.
func (s *segment) unspill(n int) error {
	blocks := make([]vecBlock, 0, (n+blockPoints-1)/blockPoints)
	for from := 0; from < n; from += blockPoints {
		to := min(from+blockPoints, n)
		b := newBlock(blockPoints * s.dim)
		blocks = append(blocks, b)
		if _, err := s.spill.f.ReadAt(floatBytes(b.v[:(to-from)*s.dim]), int64(from)*int64(s.dim)*4); err != nil {
			for i := range blocks {
				blocks[i].free()
			}
			return err
		}
	}
	s.spill.close()
	s.blocks, s.spill = blocks, nil
	return nil
}

// release frees every block and the spill file.
func (s *segment) release() {
	for i := range s.blocks {
		s.blocks[i].free()
	}
	s.blocks = nil
	if s.spill != nil {
		s.spill.close()
		s.spill = nil
	}
	s.dequantise()
}
