"""What agents run on, whatever their family: data I/O, the LLM client, the sandbox, parallel work, figures."""
