package qdranttest

import (
	"bytes"
	"cmp"
	"context"
	"math"
	"slices"

	"github.com/google/uuid"
	"github.com/qdrant/go-client/qdrant"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
)

// pointID is an unsigned integer or a UUID, as Qdrant allows.
type pointID struct {
	isUUID bool
	num    uint64
	uuid   uuid.UUID
}

func parseID(id *qdrant.PointId) (pointID, error) {
	switch v := id.GetPointIdOptions().(type) {
	case *qdrant.PointId_Num:
		return pointID{num: v.Num}, nil
	case *qdrant.PointId_Uuid:
		u, err := uuid.Parse(v.Uuid)
		if err != nil {
			return pointID{}, status.Errorf(codes.InvalidArgument, "Unable to parse UUID: %s", v.Uuid)
		}
		return pointID{isUUID: true, uuid: u}, nil
	}
	return pointID{}, status.Error(codes.InvalidArgument, "Wrong input: point id is required")
}

func (p pointID) proto() *qdrant.PointId {
	if p.isUUID {
		return qdrant.NewIDUUID(p.uuid.String())
	}
	return qdrant.NewIDNum(p.num)
}

// compareIDs orders integer ids before UUIDs, UUIDs as 128-bit numbers.
func compareIDs(a, b pointID) int {
	switch {
	case a.isUUID != b.isUUID:
		if a.isUUID {
			return 1
		}
		return -1
	case a.isUUID:
		return bytes.Compare(a.uuid[:], b.uuid[:])
	}
	return cmp.Compare(a.num, b.num)
}

type sparseVec struct {
	indices []uint32
	values  []float32
}

type storedPoint struct {
	id      pointID
	payload map[string]*qdrant.Value
	dense   map[string][]float32
	sparse  map[string]sparseVec
}

type pointsService struct {
	qdrant.UnimplementedPointsServer
	s *Server
}

func completed() *qdrant.PointsOperationResponse {
	return &qdrant.PointsOperationResponse{Result: &qdrant.UpdateResult{Status: qdrant.UpdateStatus_Completed}}
}

func (ps *pointsService) Upsert(_ context.Context, req *qdrant.UpsertPoints) (*qdrant.PointsOperationResponse, error) {
	s := ps.s
	s.mu.Lock()
	defer s.mu.Unlock()
	col, err := s.collection(req.GetCollectionName())
	if err != nil {
		return nil, err
	}
	// Validate the whole batch before applying any of it.
	pts := make([]*storedPoint, 0, len(req.GetPoints()))
	for _, p := range req.GetPoints() {
		sp, err := col.convert(p)
		if err != nil {
			return nil, err
		}
		pts = append(pts, sp)
	}
	for _, sp := range pts {
		col.points[sp.id] = sp
	}
	return completed(), nil
}

// convert validates one point against the collection's vector config.
func (c *collection) convert(p *qdrant.PointStruct) (*storedPoint, error) {
	id, err := parseID(p.GetId())
	if err != nil {
		return nil, err
	}
	sp := &storedPoint{id: id, payload: map[string]*qdrant.Value{}, dense: map[string][]float32{}, sparse: map[string]sparseVec{}}
	for k, v := range p.GetPayload() {
		sp.payload[k] = proto.Clone(v).(*qdrant.Value)
	}
	named := map[string]*qdrant.Vector{}
	switch v := p.GetVectors().GetVectorsOptions().(type) {
	case *qdrant.Vectors_Vector:
		named[""] = v.Vector
	case *qdrant.Vectors_Vectors:
		named = v.Vectors.GetVectors()
	}
	for name, v := range named {
		if params := c.dense[name]; params != nil {
			data := v.GetDense().GetData()
			if data == nil {
				data = v.GetData() //nolint:staticcheck // the deprecated field, which clients still send
			}
			if uint64(len(data)) != params.GetSize() {
				return nil, status.Errorf(codes.InvalidArgument,
					"Wrong input: Vector dimension error: expected dim: %d, got %d", params.GetSize(), len(data))
			}
			data = slices.Clone(data)
			if params.GetDistance() == qdrant.Distance_Cosine {
				normalize(data)
			}
			sp.dense[name] = data
			continue
		}
		if c.sparse[name] != nil {
			sv := v.GetSparse()
			idx, val := sv.GetIndices(), sv.GetValues()
			if sv == nil {
				idx, val = v.GetIndices().GetData(), v.GetData() //nolint:staticcheck // the deprecated sparse form clients still send
			}
			if len(idx) != len(val) {
				return nil, status.Errorf(codes.InvalidArgument, "Wrong input: sparse vector %q: %d indices, %d values", name, len(idx), len(val))
			}
			seen := map[uint32]bool{}
			for _, i := range idx {
				if seen[i] {
					return nil, status.Errorf(codes.InvalidArgument, "Wrong input: sparse vector %q: indices must be unique, %d repeats", name, i)
				}
				seen[i] = true
			}
			sp.sparse[name] = sparseVec{indices: slices.Clone(idx), values: slices.Clone(val)}
			continue
		}
		return nil, status.Errorf(codes.InvalidArgument, "Wrong input: Not existing vector name error: %s", name)
	}
	return sp, nil
}

func normalize(v []float32) {
	var s float64
	for _, x := range v {
		s += float64(x) * float64(x)
	}
	if s == 0 {
		return
	}
	n := math.Sqrt(s)
	for i := range v {
		v[i] = float32(float64(v[i]) / n)
	}
}

func (ps *pointsService) Delete(_ context.Context, req *qdrant.DeletePoints) (*qdrant.PointsOperationResponse, error) {
	s := ps.s
	s.mu.Lock()
	defer s.mu.Unlock()
	col, err := s.collection(req.GetCollectionName())
	if err != nil {
		return nil, err
	}
	switch sel := req.GetPoints().GetPointsSelectorOneOf().(type) {
	case *qdrant.PointsSelector_Points:
		for _, pid := range sel.Points.GetIds() {
			id, err := parseID(pid)
			if err != nil {
				return nil, err
			}
			delete(col.points, id)
		}
	case *qdrant.PointsSelector_Filter:
		var del []pointID
		for id, p := range col.points {
			ok, err := matchFilter(sel.Filter, p)
			if err != nil {
				return nil, err
			}
			if ok {
				del = append(del, id)
			}
		}
		for _, id := range del {
			delete(col.points, id)
		}
	default:
		return nil, status.Error(codes.InvalidArgument, "Wrong input: points selector is required")
	}
	return completed(), nil
}

func (ps *pointsService) Get(_ context.Context, req *qdrant.GetPoints) (*qdrant.GetResponse, error) {
	s := ps.s
	s.mu.Lock()
	defer s.mu.Unlock()
	col, err := s.collection(req.GetCollectionName())
	if err != nil {
		return nil, err
	}
	out := &qdrant.GetResponse{}
	for _, pid := range req.GetIds() {
		id, err := parseID(pid)
		if err != nil {
			return nil, err
		}
		if p := col.points[id]; p != nil {
			out.Result = append(out.Result, &qdrant.RetrievedPoint{
				Id: id.proto(), Payload: payloadOut(p, req.GetWithPayload()), Vectors: vectorsOut(p, req.GetWithVectors()),
			})
		}
	}
	return out, nil
}

// filtered returns the points matching f in id order. The caller holds mu.
func (c *collection) filtered(f *qdrant.Filter) ([]*storedPoint, error) {
	var out []*storedPoint
	for _, p := range c.points {
		ok, err := matchFilter(f, p)
		if err != nil {
			return nil, err
		}
		if ok {
			out = append(out, p)
		}
	}
	slices.SortFunc(out, func(a, b *storedPoint) int { return compareIDs(a.id, b.id) })
	return out, nil
}

func (ps *pointsService) Scroll(_ context.Context, req *qdrant.ScrollPoints) (*qdrant.ScrollResponse, error) {
	s := ps.s
	s.mu.Lock()
	defer s.mu.Unlock()
	col, err := s.collection(req.GetCollectionName())
	if err != nil {
		return nil, err
	}
	if req.OrderBy != nil {
		return nil, status.Error(codes.Unimplemented, "qdranttest: scroll order_by is not implemented by the fake")
	}
	pts, err := col.filtered(req.GetFilter())
	if err != nil {
		return nil, err
	}
	if req.Offset != nil {
		off, err := parseID(req.GetOffset())
		if err != nil {
			return nil, err
		}
		i, _ := slices.BinarySearchFunc(pts, off, func(p *storedPoint, id pointID) int { return compareIDs(p.id, id) })
		pts = pts[i:]
	}
	limit := 10
	if req.Limit != nil {
		limit = int(req.GetLimit())
	}
	out := &qdrant.ScrollResponse{}
	if len(pts) > limit {
		out.NextPageOffset = pts[limit].id.proto()
		pts = pts[:limit]
	}
	for _, p := range pts {
		out.Result = append(out.Result, &qdrant.RetrievedPoint{
			Id: p.id.proto(), Payload: payloadOut(p, req.GetWithPayload()), Vectors: vectorsOut(p, req.GetWithVectors()),
		})
	}
	return out, nil
}

func (ps *pointsService) Count(_ context.Context, req *qdrant.CountPoints) (*qdrant.CountResponse, error) {
	s := ps.s
	s.mu.Lock()
	defer s.mu.Unlock()
	col, err := s.collection(req.GetCollectionName())
	if err != nil {
		return nil, err
	}
	pts, err := col.filtered(req.GetFilter())
	if err != nil {
		return nil, err
	}
	return &qdrant.CountResponse{Result: &qdrant.CountResult{Count: uint64(len(pts))}}, nil
}

// CreateFieldIndex records the index; creating it again replaces it, as in
// Qdrant. The fake's filters do not need indexes.
func (ps *pointsService) CreateFieldIndex(_ context.Context, req *qdrant.CreateFieldIndexCollection) (*qdrant.PointsOperationResponse, error) {
	s := ps.s
	s.mu.Lock()
	defer s.mu.Unlock()
	col, err := s.collection(req.GetCollectionName())
	if err != nil {
		return nil, err
	}
	if req.GetFieldName() == "" {
		return nil, status.Error(codes.InvalidArgument, "Wrong input: field name is required")
	}
	if req.GetFieldType() != qdrant.FieldType_FieldTypeKeyword {
		return nil, status.Errorf(codes.Unimplemented, "qdranttest: %s indexes are not implemented by the fake", req.GetFieldType())
	}
	info := &qdrant.PayloadSchemaInfo{DataType: qdrant.PayloadSchemaType_Keyword}
	if p := req.GetFieldIndexParams(); p != nil {
		info.Params = proto.Clone(p).(*qdrant.PayloadIndexParams)
	}
	col.schema[req.GetFieldName()] = info
	return completed(), nil
}

// payloadOut applies a with_payload selector (nil: no payload).
func payloadOut(p *storedPoint, sel *qdrant.WithPayloadSelector) map[string]*qdrant.Value {
	keep := func(string) bool { return false }
	switch v := sel.GetSelectorOptions().(type) {
	case *qdrant.WithPayloadSelector_Enable:
		keep = func(string) bool { return v.Enable }
	case *qdrant.WithPayloadSelector_Include:
		keep = func(k string) bool { return slices.Contains(v.Include.GetFields(), k) }
	case *qdrant.WithPayloadSelector_Exclude:
		keep = func(k string) bool { return !slices.Contains(v.Exclude.GetFields(), k) }
	}
	out := map[string]*qdrant.Value{}
	for k, v := range p.payload {
		if keep(k) {
			out[k] = proto.Clone(v).(*qdrant.Value)
		}
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

// vectorsOut applies a with_vectors selector (nil: no vectors).
func vectorsOut(p *storedPoint, sel *qdrant.WithVectorsSelector) *qdrant.VectorsOutput {
	keep := func(string) bool { return false }
	switch v := sel.GetSelectorOptions().(type) {
	case *qdrant.WithVectorsSelector_Enable:
		keep = func(string) bool { return v.Enable }
	case *qdrant.WithVectorsSelector_Include:
		keep = func(n string) bool { return slices.Contains(v.Include.GetNames(), n) }
	}
	out := map[string]*qdrant.VectorOutput{}
	for n, d := range p.dense {
		if keep(n) {
			out[n] = &qdrant.VectorOutput{Vector: &qdrant.VectorOutput_Dense{Dense: &qdrant.DenseVector{Data: slices.Clone(d)}}}
		}
	}
	for n, sv := range p.sparse {
		if keep(n) {
			out[n] = &qdrant.VectorOutput{Vector: &qdrant.VectorOutput_Sparse{Sparse: &qdrant.SparseVector{
				Indices: slices.Clone(sv.indices), Values: slices.Clone(sv.values)}}}
		}
	}
	if len(out) == 0 {
		return nil
	}
	return &qdrant.VectorsOutput{VectorsOptions: &qdrant.VectorsOutput_Vectors{Vectors: &qdrant.NamedVectorsOutput{Vectors: out}}}
}
