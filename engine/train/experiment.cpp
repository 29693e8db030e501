// placeholder: the experiment file parser is being written.
