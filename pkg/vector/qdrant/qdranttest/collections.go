package qdranttest

import (
	"context"
	"maps"
	"slices"

	"github.com/qdrant/go-client/qdrant"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
)

// collection is one collection's configuration and points.
type collection struct {
	dense    map[string]*qdrant.VectorParams // "" is the unnamed vector
	sparse   map[string]*qdrant.SparseVectorParams
	vecsCfg  *qdrant.VectorsConfig
	metadata map[string]*qdrant.Value
	schema   map[string]*qdrant.PayloadSchemaInfo
	points   map[pointID]*storedPoint
}

type collectionsService struct {
	qdrant.UnimplementedCollectionsServer
	s *Server
}

func (c *collectionsService) Create(_ context.Context, req *qdrant.CreateCollection) (*qdrant.CollectionOperationResponse, error) {
	s := c.s
	s.mu.Lock()
	defer s.mu.Unlock()
	name := req.GetCollectionName()
	if name == "" {
		return nil, status.Error(codes.InvalidArgument, "Wrong input: collection name must not be empty")
	}
	if s.cols[name] != nil {
		return nil, status.Errorf(codes.AlreadyExists, "Wrong input: Collection `%s` already exists!", name)
	}
	col := &collection{
		dense:    map[string]*qdrant.VectorParams{},
		sparse:   map[string]*qdrant.SparseVectorParams{},
		metadata: map[string]*qdrant.Value{},
		schema:   map[string]*qdrant.PayloadSchemaInfo{},
		points:   map[pointID]*storedPoint{},
	}
	vc := req.GetVectorsConfig()
	switch {
	case vc.GetParams() != nil:
		col.dense[""] = vc.GetParams()
	case vc.GetParamsMap() != nil:
		maps.Copy(col.dense, vc.GetParamsMap().GetMap())
	}
	for n, p := range col.dense {
		if p.GetSize() == 0 {
			return nil, status.Errorf(codes.InvalidArgument, "Wrong input: vector %q: size must be positive", n)
		}
		if p.GetDistance() == qdrant.Distance_UnknownDistance {
			return nil, status.Errorf(codes.InvalidArgument, "Wrong input: vector %q: distance is required", n)
		}
	}
	for n, p := range req.GetSparseVectorsConfig().GetMap() {
		if col.dense[n] != nil {
			return nil, status.Errorf(codes.InvalidArgument, "Wrong input: vector name %q is used by a dense and a sparse vector", n)
		}
		col.sparse[n] = p
	}
	if vc != nil {
		col.vecsCfg = proto.Clone(vc).(*qdrant.VectorsConfig)
	}
	for k, v := range req.GetMetadata() {
		col.metadata[k] = proto.Clone(v).(*qdrant.Value)
	}
	s.cols[name] = col
	return &qdrant.CollectionOperationResponse{Result: true}, nil
}

func (c *collectionsService) Get(_ context.Context, req *qdrant.GetCollectionInfoRequest) (*qdrant.GetCollectionInfoResponse, error) {
	s := c.s
	s.mu.Lock()
	defer s.mu.Unlock()
	col, err := s.collection(req.GetCollectionName())
	if err != nil {
		return nil, err
	}
	sparse := map[string]*qdrant.SparseVectorParams{}
	for n, p := range col.sparse {
		sparse[n] = proto.Clone(p).(*qdrant.SparseVectorParams)
	}
	meta := map[string]*qdrant.Value{}
	for k, v := range col.metadata {
		meta[k] = proto.Clone(v).(*qdrant.Value)
	}
	schema := map[string]*qdrant.PayloadSchemaInfo{}
	for k, v := range col.schema {
		schema[k] = proto.Clone(v).(*qdrant.PayloadSchemaInfo)
	}
	params := &qdrant.CollectionParams{ShardNumber: 1, SparseVectorsConfig: &qdrant.SparseVectorConfig{Map: sparse}}
	if col.vecsCfg != nil {
		params.VectorsConfig = proto.Clone(col.vecsCfg).(*qdrant.VectorsConfig)
	}
	return &qdrant.GetCollectionInfoResponse{Result: &qdrant.CollectionInfo{
		Status:        qdrant.CollectionStatus_Green,
		Config:        &qdrant.CollectionConfig{Params: params, Metadata: meta},
		PayloadSchema: schema,
		PointsCount:   qdrant.PtrOf(uint64(len(col.points))),
	}}, nil
}

func (c *collectionsService) CollectionExists(_ context.Context, req *qdrant.CollectionExistsRequest) (*qdrant.CollectionExistsResponse, error) {
	s := c.s
	s.mu.Lock()
	defer s.mu.Unlock()
	return &qdrant.CollectionExistsResponse{Result: &qdrant.CollectionExists{Exists: s.cols[req.GetCollectionName()] != nil}}, nil
}

func (c *collectionsService) List(context.Context, *qdrant.ListCollectionsRequest) (*qdrant.ListCollectionsResponse, error) {
	s := c.s
	s.mu.Lock()
	defer s.mu.Unlock()
	out := &qdrant.ListCollectionsResponse{}
	for _, n := range slices.Sorted(maps.Keys(s.cols)) {
		out.Collections = append(out.Collections, &qdrant.CollectionDescription{Name: n})
	}
	return out, nil
}

// Delete answers false for a collection that does not exist, as Qdrant does.
func (c *collectionsService) Delete(_ context.Context, req *qdrant.DeleteCollection) (*qdrant.CollectionOperationResponse, error) {
	s := c.s
	s.mu.Lock()
	defer s.mu.Unlock()
	_, ok := s.cols[req.GetCollectionName()]
	delete(s.cols, req.GetCollectionName())
	return &qdrant.CollectionOperationResponse{Result: ok}, nil
}
