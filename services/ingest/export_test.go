package ingest

// CommitTrigger is the commit decision, for the tests that apply turns to a store directly.
var CommitTrigger = commitTrigger
