import MediaFetchTesting
import Synchronization
import Testing

@testable import MediaFetchCore

#if canImport(Glibc)
    import Glibc
#endif

@Suite("The job queue between a run's feeder and its workers")
struct JobQueueTests {
    @Test func workersTakeJobsInOrderAndEndWhenTheQueueIsFinishedAndEmpty() async {
        let jobs = JobQueue<Int>(capacity: 8, workerLimit: 4, activeTarget: 2)
        for job in 0..<3 { jobs.put(job) }
        jobs.finish()
        var taken: [Int] = []
        while let job = await jobs.take() { taken.append(job) }
        #expect(taken == [0, 1, 2])
        #expect(await jobs.take() == nil)
    }

    @Test func aWaitingWorkerGetsTheNextJobOrNilWhenTheQueueIsFinished() async {
        let jobs = JobQueue<Int>(capacity: 8, workerLimit: 4, activeTarget: 2)
        let first = Task { await jobs.take() }
        await yield(until: { jobs.waiters.workers == 1 })
        jobs.put(7)
        #expect(await first.value == 7)
        let second = Task { await jobs.take() }
        await yield(until: { jobs.waiters.workers == 1 })
        jobs.finish()
        #expect(await second.value == nil)
        #expect(jobs.waiters.workers == 0)
    }

    /// The feeder waits at `capacity` jobs and goes on once half of them are taken.
    @Test func theFeederWaitsForRoomUntilHalfTheJobsAreTaken() async {
        let jobs = JobQueue<Int>(capacity: 4, workerLimit: 1, activeTarget: 1)
        for job in 0..<4 { jobs.put(job) }
        #expect(jobs.isFull)
        #expect(jobs.addWorkerIfWanted(), "the one worker, so that the feeder waits for room, not for a worker")
        let feeder = Task { await jobs.waitUntil(atMost: 2) }
        await yield(until: { jobs.waiters.feeder })
        #expect(await jobs.take() == 0)
        #expect(jobs.waiters.feeder, "three jobs wait: more than half of four")
        #expect(await jobs.take() == 1)
        await feeder.value
        #expect(!jobs.isFull)
    }

    /// Workers are added while jobs wait and none is free, up to the active target; a parked worker (a store
    /// waiting on the disk) makes room for one more, and wakes a feeder waiting for room so that it can add it.
    @Test func aWorkerMoreIsWantedOnlyWhileTooFewAreActive() async {
        let jobs = JobQueue<Int>(capacity: 2, workerLimit: 3, activeTarget: 2)
        #expect(!jobs.addWorkerIfWanted(), "no job waits")
        jobs.put(0)
        #expect(jobs.addWorkerIfWanted())
        #expect(jobs.addWorkerIfWanted())
        #expect(!jobs.addWorkerIfWanted(), "two workers are active: the target")
        jobs.put(1)
        #expect(jobs.isFull)
        let feeder = Task { await jobs.waitUntil(atMost: 1) }
        await yield(until: { jobs.waiters.feeder })
        jobs.park()
        await feeder.value
        #expect(jobs.addWorkerIfWanted())
        jobs.park()
        #expect(!jobs.addWorkerIfWanted(), "three workers: the limit")
        jobs.unpark()
        jobs.unpark()
        #expect(jobs.waiters.started == 3)
    }

    /// After the last job the feeder waits for the queue to empty, still woken to add a worker when one parks:
    /// stores that wait for each other (an archive's, a flush's) do not hold the jobs behind them for ever.
    @Test func afterTheLastJobAParkedWorkerStillGetsAWorkerMoreStarted() async {
        let jobs = JobQueue<Int>(capacity: 4, workerLimit: 2, activeTarget: 1)
        jobs.put(0)
        jobs.put(1)
        #expect(jobs.addWorkerIfWanted())
        #expect(await jobs.take() == 0)
        jobs.finish()
        let feeder = Task { await jobs.waitUntil(atMost: 0) }
        await yield(until: { jobs.waiters.feeder })
        jobs.park()
        await feeder.value
        #expect(jobs.addWorkerIfWanted())
        #expect(await jobs.take() == 1)
        #expect(await jobs.take() == nil)
        jobs.unpark()
    }

    /// A job put while a worker waits goes to that worker: none waits, so no worker more is wanted.
    @Test func aJobPutWhileAWorkerWaitsGoesToItAndWantsNoWorkerMore() async {
        let jobs = JobQueue<Int>(capacity: 4, workerLimit: 4, activeTarget: 4)
        let worker = Task { await jobs.take() }
        await yield(until: { jobs.waiters.workers == 1 })
        jobs.put(1)
        #expect(!jobs.addWorkerIfWanted())
        #expect(await worker.value == 1)
        #expect(jobs.waiters.started == 0)
    }

    /// A run's workers grow with its transfer slots up to 496 beyond them, and stay within a third of the open
    /// files the process may have (each waiting store holds up to two descriptors).
    @Test func theWorkersARunMayHaveStayWithinItsSlotsAndItsOpenFiles() {
        #expect(Pipeline.workerLimit(concurrency: 1, openFiles: .max) == 32)
        #expect(Pipeline.workerLimit(concurrency: 16, openFiles: 8192) == 16 + 496)
        #expect(Pipeline.workerLimit(concurrency: 16, openFiles: 1024) == 16 + 341)
        #expect(Pipeline.workerLimit(concurrency: 64, openFiles: 30) == 64 + 10)
        // The process's own limit, as getrlimit gives it (this test process has one).
        var limit = rlimit()
        #expect(getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit) == 0)
        #expect(Pipeline.openFileLimit() == (limit.rlim_cur == rlim_t.max ? .max : Int(limit.rlim_cur)))
    }
}
