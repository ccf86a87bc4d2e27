# The sampling of thread states between refreshes runs in a thread of the pipeline
# (src/pipeline.c, source/taskstate.h): glibc 2.34+ has it in libc, older ones need it.
LDLIBS += -pthread
