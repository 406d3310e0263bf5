package attribute

import (
	"fmt"

	"github.com/nodeprint/nodeprint/pkg/lang"
)

// signalHelpZh is each signal's Help in Chinese, for the Chinese runbooks.
// A test checks that every signal has one and that none is left over.
var signalHelpZh = map[string]string{
	"harness.healthy":                    "harness 自身的环境（控制平面、Karpenter 进程）保持健康时为 1",
	"api.karpenterErrors":                "运行期间 Karpenter 失败的 API 请求数（连接错误、5xx、429），来自其 client_go_request_total 指标（code 标签）；本次运行与并发运行共用 Karpenter 时不可用",
	"api.karpenterLatencyMs":             "运行期间 Karpenter API 请求的平均延迟，单位毫秒（client_go_request_duration_seconds 的总和除以计数）；本次运行与并发运行共用 Karpenter 时不可用",
	"cloud.insufficientCapacityEvents":   "本次运行的 NodeClaim 上的 InsufficientCapacityError 事件数（含重复）",
	"policy.nodeClassMissing":            "NodePool 引用的 NodeClass 不存在时为 1",
	"nodeclaims.launchedNotRegistered":   fmt.Sprintf("在运行结束前至少 %s 已 Launched、但仍未 Registered 的 NodeClaim 数", RegistrationTimeout),
	"nodes.notReady":                     "本次运行中曾经 Ready、结束时为 NotReady 的节点数",
	"nodes.ready":                        "本次运行结束时 Ready 的节点数",
	"nodeclaims.bootSlowdownSeconds":     "NodeClaim 从 Launched 到初始化（Karpenter 创建实例返回之后的启动阶段）耗时的中位数，减去基线允许的从创建到初始化的最大耗时，单位秒",
	"nodeclaims.readySlowdownSeconds":    "NodeClaim 从创建到初始化耗时的中位数，减去基线允许的最大值，单位秒",
	"nodeclaims.inFlight":                "本次运行中存在但尚未初始化的 NodeClaim 数",
	"disruption.overBudget":              "缩容期间的中断决策中，之后同时被移除的 NodeClaim 数超过该 NodePool 对应原因的中断预算当时所允许数量的决策数（按 Karpenter 自身的算法计算）",
	"disruption.heldByApplication":       "缩容期间 Karpenter 声明因其上的 Pod 而无法中断的 NodeClaim 数：Pod 带有 karpenter.sh/do-not-disrupt 注解，或 PodDisruptionBudget 不允许驱逐（其 DisruptionBlocked 事件；节点自身的注解不计入）",
	"disruption.keptByKarpenter":         "缩容结束时仍在、Karpenter 的整合检查过却保留的 NodeClaim 数，并附其对每个的原因（其 Unconsolidatable 事件：没有更便宜的替换、需要不止一个替换节点、某个 Pod 无法调度到别处、NodePool 的策略）；取其最近发布的原因，可能早于缩容。这是给工程师看的原话，而不是原因：没有规则依赖它",
	"disruption.notGone":                 "缩容中被删除、其节点排空（其上已无本次运行的 Pod）90 秒后仍然存在的 NodeClaim 数：未终止的实例，或被其他控制器扣住的 Node",
	"disruption.notGoneHeld":             "缩容中被删除、其节点排空 90 秒后仍然存在、且其 Node 在 Karpenter 自己的 finalizer 移除后仍带有其他 finalizer 的 NodeClaim 数：另一个控制器扣住了 Node 对象，NodeClaim 在等它",
	"disruption.replacedAgain":           "缩容期间 Karpenter 为替换被中断节点而创建、随后又因同一原因被中断的 NodeClaim 数（替换循环的轮数），超出基线任一次运行缩容中最多数量的部分",
	"disruption.fewerRemoved":            "缩容移除的 NodeClaim 比基线任一次运行的缩容所移除的最少数量还少多少",
	"nodeclaims.replaced":                "运行期间注册过节点后又被删除（中断）的 NodeClaim 数，超出基线单次运行最多替换数的部分",
	"pods.pending":                       "运行结束时仍未调度的 Pod 数",
	"pods.pendingLong":                   fmt.Sprintf("运行结束时仍未调度、且创建于结束前至少 %s 的 Pod 数", PendingGrace),
	"fit.pendingFitCatalog":              "每个有 Pending Pod 的工作负载都能被实例目录中的某个实例类型容纳时为 1（Karpenter 的实例模型，requests 对比 allocatable）",
	"fit.pendingFitNodePool":             "每个有 Pending Pod 的工作负载都能被 NodePool 允许的某个实例类型容纳时为 1",
	"policy.pendingAdmittedByNoNodePool": "有 Pending Pod 的工作负载通过 nodeSelector 或必需的亲和性所要求的标签，没有任何 NodePool 的节点会带有时为 1",
	"policy.limitsReached":               "NodePool 设置了 limits，且当前用量再加一个 Pod 会超出、任一资源的 limit 余量小于每个能容纳 Pod 的实例类型，或 Karpenter 报告已超出时为 1",
	"selection.policyViolations":         "本次运行中标签不满足 NodePool 约束的节点数",
	"selection.nodesOverRequested":       "本次运行中其上 Pod 的 requests 超过实例 allocatable 的节点数（0 表示 Karpenter 的选择符合 requests）",
	"pods.oomKilled":                     "本次运行中容器上次终止原因为 OOMKilled 的 Pod 数",
	"pods.restarts":                      "本次运行所有 Pod 的容器重启次数之和",
	"pods.crashLooping":                  "本次运行中处于 CrashLoopBackOff、或因 OOMKilled 以外原因退出后重启的 Pod 数",
	"pods.imagePullFailing":              "本次运行中容器处于 ErrImagePull 或 ImagePullBackOff 的 Pod 数",
	"pods.cpuUsageOverRequest":           "Pod 的 CPU 用量（metrics.k8s.io）与其 CPU requests 之比的最大值",
	"workload.replicaGrowth":             "各工作负载当前期望副本数减去应用时的副本数之和（HPA 在起作用）",
	"selection.nodesDelta":               "运行结束时的节点数减去任一基线运行中的最大节点数",
	"karpenter.evictions":                "运行期间随 Karpenter 删除的 NodeClaim（漂移、过期、整合）一起被删除的 Pod 数：Karpenter 自身的写入；达到阈值时，运行期间的 API 变慢被视为其结果",
	"api.karpenterLatencyGrowth":         "运行期间 Karpenter API 请求的平均延迟与基线各次运行中位数之比（client_go_request_duration_seconds）：对这台 API Server 而言什么才算慢——其正常延迟取决于所在机器与负载；本次运行与并发运行共享 Karpenter 时不可用",
	"karpenter.usageGrowth":              fmt.Sprintf("Karpenter 自身 CPU 秒数、内存峰值或 API 请求数相对基线中位数的最大增幅（仅计校验判定失败者：至少 %.1f 倍且显著）；无失败时为 0；本次运行与并发运行共享 Karpenter 时不可用", UsageGate),
	"karpenter.requestSurge":             fmt.Sprintf("Karpenter 发出的 API 请求数至少是基线中最忙一次运行的 %.0f 倍、且失败率低于 %.0f%% 时为 1：这是它自身的请求洪峰，其依赖的 API Server 因此变慢；本次运行与并发运行共享 Karpenter 时不可用", RequestSurgeRatio, 100*RequestSurgeFailed),
	"karpenter.nodeClaimSurge":           fmt.Sprintf("Karpenter 创建的 NodeClaim 数至少是基线在相同 Pod 数下所需的 %.0f 倍（且多出 %d 个以上）时为 1：这是它自身的写入量，可能拖慢它随后依赖的 API Server", SurgeRatio, SurgeExcess),
	"diff.regressions":                   "指纹相对基线、校验不通过的偏差数",
	"inputs.policyChanged":               "实际应用的 NodePool 或 NodeClass 与基线不同时为 1",
	"inputs.workloadChanged":             "实际应用的某个工作负载的 Pod 模板、副本数、HPA 或 PodDisruptionBudget 与基线不同时为 1",
	"inputs.karpenterChanged":            "Karpenter 的版本、二进制或设置与基线不同时为 1",
	"inputs.catalogChanged":              "实例目录（云上可提供的实例）与基线不同时为 1",
}

// HelpIn returns the signal's help in a language (lang.En or lang.Zh).
func (s SignalDef) HelpIn(l string) string {
	if h, ok := signalHelpZh[s.ID]; ok && l == lang.Zh {
		return h
	}
	return s.Help
}
