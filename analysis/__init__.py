"""Results to tables and figures: nothing here loads a model."""
