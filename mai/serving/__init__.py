"""MAI behind an OpenAI-compatible HTTP endpoint (`python -m mai serve`); the paper's App. B.5 measured with it."""
