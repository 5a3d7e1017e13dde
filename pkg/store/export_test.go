package store

// DecodeSources is decodeSources, for the external tests.
var DecodeSources = decodeSources
