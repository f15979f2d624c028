-- The schema cuco wrote at schema version 1 (before llm_calls and agent_steps), as SQLAlchemy's PostgreSQL DDL compiler
-- dumped it from a database created by that code. Used to test the upgrade in place.
CREATE TABLE runs (
	name VARCHAR(200) NOT NULL, 
	spec_name VARCHAR(200) NOT NULL, 
	pattern VARCHAR(100) NOT NULL, 
	spec_hash VARCHAR(128) NOT NULL, 
	spec_json TEXT NOT NULL, 
	config JSON NOT NULL, 
	status VARCHAR(20) NOT NULL, 
	note TEXT NOT NULL, 
	created_at TIMESTAMP WITH TIME ZONE NOT NULL, 
	updated_at TIMESTAMP WITH TIME ZONE NOT NULL, 
	PRIMARY KEY (name)
);
CREATE TABLE schema_version (
	id SERIAL NOT NULL, 
	version INTEGER NOT NULL, 
	updated_at TIMESTAMP WITH TIME ZONE NOT NULL, 
	PRIMARY KEY (id)
);
CREATE TABLE candidates (
	id VARCHAR(64) NOT NULL, 
	seq INTEGER NOT NULL, 
	run_name VARCHAR(200) NOT NULL, 
	parent_ids JSON NOT NULL, 
	generation INTEGER NOT NULL, 
	island INTEGER NOT NULL, 
	origin_kind VARCHAR(20) NOT NULL, 
	origin_model VARCHAR(200), 
	origin_patch_type VARCHAR(50), 
	source TEXT NOT NULL, 
	point JSON, 
	point_key VARCHAR(200), 
	content_hash VARCHAR(64) NOT NULL, 
	created_at TIMESTAMP WITH TIME ZONE NOT NULL, 
	PRIMARY KEY (id), 
	CONSTRAINT uq_candidates_run_hash UNIQUE (run_name, content_hash), 
	FOREIGN KEY(run_name) REFERENCES runs (name) ON DELETE CASCADE
);
CREATE INDEX ix_candidates_seq ON candidates (seq);
CREATE INDEX ix_candidates_point_key ON candidates (point_key);
CREATE INDEX ix_candidates_run_generation ON candidates (run_name, generation);
CREATE TABLE evaluations (
	id SERIAL NOT NULL, 
	candidate_id VARCHAR(64) NOT NULL, 
	status VARCHAR(32) NOT NULL, 
	stage VARCHAR(32) NOT NULL, 
	reason TEXT NOT NULL, 
	fitness FLOAT, 
	timing_source VARCHAR(20), 
	payload JSON NOT NULL, 
	created_at TIMESTAMP WITH TIME ZONE NOT NULL, 
	PRIMARY KEY (id), 
	FOREIGN KEY(candidate_id) REFERENCES candidates (id) ON DELETE CASCADE
);
CREATE INDEX ix_evaluations_status ON evaluations (status);
CREATE INDEX ix_evaluations_candidate_id ON evaluations (candidate_id);
CREATE INDEX ix_evaluations_fitness ON evaluations (fitness);
